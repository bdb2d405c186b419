package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The NetworkPolicies of policies/networkpolicies as the chart renders them. */
class NetworkPolicyRenderTest {

  private static final HelmChart.Rendered DEFAULT = HelmChart.render();
  private static final Map<String, Object> FROM_SANDBOXD = Map.of(
      "namespaceSelector", Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "cai-system")),
      "podSelector", Map.of("matchLabels", Map.of("app.kubernetes.io/name", "sandboxd",
          "app.kubernetes.io/instance", "sandboxd")));
  private static final List<Object> PORT_8080 = List.of(Map.of("protocol", "TCP", "port", 8080L));
  // Every port but 53: DNS goes to the cluster DNS pods only.
  private static final List<Object> ALL_PORTS_BUT_DNS = List.of(
      Map.of("protocol", "TCP", "port", 1L, "endPort", 52L), Map.of("protocol", "TCP", "port", 54L, "endPort", 65535L),
      Map.of("protocol", "UDP", "port", 1L, "endPort", 52L), Map.of("protocol", "UDP", "port", 54L, "endPort", 65535L));

  @Test
  void defaultDenyCoversEveryPodOfTheSandboxNamespaceBothWays() {
    Map<String, Object> np = DEFAULT.get("NetworkPolicy", "sandboxd-default-deny");
    assertEquals("cai-sandbox", (Object) at(np, "metadata", "namespace"));
    assertEquals(Map.of(), (Object) at(np, "spec", "podSelector"));
    assertEquals(List.of("Ingress", "Egress"), (Object) at(np, "spec", "policyTypes"));
    assertNull(at(np, "spec", "ingress"));
    assertNull(at(np, "spec", "egress"));
  }

  @Test
  void snippetsAreReachableOnlyFromSandboxdAndReachNothing() {
    Map<String, Object> np = DEFAULT.get("NetworkPolicy", "sandboxd-snippet");
    assertEquals("cai-sandbox", (Object) at(np, "metadata", "namespace"));
    assertEquals(Map.of("matchLabels", Map.of("sandboxd.io/kind", "snippet")), (Object) at(np, "spec", "podSelector"));
    assertEquals(List.of("Ingress", "Egress"), (Object) at(np, "spec", "policyTypes"));
    assertEquals(List.of(Map.of("from", List.of(FROM_SANDBOXD), "ports", PORT_8080)), (Object) at(np, "spec", "ingress"));
    assertEquals(List.of(), (Object) at(np, "spec", "egress"), "no egress at all, not even DNS");
  }

  @Test
  void toolsAreReachableOnlyFromSandboxdAndReachOnlyThePublicInternetAndClusterDns() {
    Map<String, Object> np = DEFAULT.get("NetworkPolicy", "sandboxd-tool");
    assertEquals("cai-sandbox", (Object) at(np, "metadata", "namespace"));
    assertEquals(Map.of("matchLabels", Map.of("sandboxd.io/kind", "tool"), "matchExpressions", List.of(Map.of(
        "key", "sandboxd.io/egress", "operator", "DoesNotExist"))), (Object) at(np, "spec", "podSelector"),
        "tool pods of the internet profile only: a profiled pod gets its profile's policy (D11)");
    assertEquals(List.of("Ingress", "Egress"), (Object) at(np, "spec", "policyTypes"));
    assertEquals(List.of(Map.of("from", List.of(FROM_SANDBOXD), "ports", PORT_8080)), (Object) at(np, "spec", "ingress"));

    List<Map<String, Object>> egress = at(np, "spec", "egress");
    assertEquals(2, egress.size());
    List<Map<String, Object>> to = at(egress.get(0), "to");
    assertEquals(List.of("0.0.0.0/0", "2000::/3"), to.stream().map(peer -> at(peer, "ipBlock", "cidr")).toList(),
        "every IPv4 address and IPv6's global unicast, but the blocked ranges (blockedRangesAtTheirEdges)");
    assertEquals(ALL_PORTS_BUT_DNS, egress.get(0).get("ports"), "every port of a public address but DNS");
    assertEquals(List.of(Map.of(
        "namespaceSelector", Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "kube-system")),
        "podSelector", Map.of("matchLabels", Map.of("k8s-app", "kube-dns")))), egress.get(1).get("to"));
    assertEquals(List.of(Map.of("protocol", "UDP", "port", 53L), Map.of("protocol", "TCP", "port", 53L)),
        egress.get(1).get("ports"));
  }

  /**
   * Each range of blocked-ranges.yaml, read from its {@code $v4} and {@code $v6} lists, at its edges in the rendered
   * tool policy: its first and last address are not allowed, the addresses just outside it are, unless another range
   * of the list holds them or (IPv6) they lie outside the public range the policy allows. The public IPv6 range, read
   * from the same file, at its own edges. A range added to the list is tested without a line here.
   */
  @Test
  void blockedRangesAtTheirEdges() throws IOException {
    List<Map<String, Object>> to = at(DEFAULT.get("NetworkPolicy", "sandboxd-tool"), "spec", "egress", 0, "to");
    List<String> ranges = blockedRanges();
    String public6 = publicIpv6();
    for (String range : ranges) {
      int bits = address(range).length * 8;
      for (BigInteger inside : edges(range).subList(0, 2)) {
        assertFalse(allowed(to, inside, bits), show(inside, bits) + " (in " + range + ") is blocked: " + to);
      }
      for (BigInteger outside : edges(range).subList(2, 4)) {
        if (outside.signum() >= 0 && outside.bitLength() <= bits && !in(ranges, outside, bits)
            && (bits == 32 || in(List.of(public6), outside, bits))) {
          assertTrue(allowed(to, outside, bits), show(outside, bits) + " (next to " + range + ") is not blocked");
        }
      }
    }
    List<BigInteger> edges = edges(public6);
    assertTrue(allowed(to, edges.get(0), 128) && allowed(to, edges.get(1), 128), public6 + " is allowed: " + to);
    assertFalse(allowed(to, edges.get(2), 128) || allowed(to, edges.get(3), 128), "nothing next to " + public6);
  }

  /** A CIDR's first and last address, then the addresses just before and just after it. */
  private static List<BigInteger> edges(String cidr) {
    int hostBits = address(cidr).length * 8 - prefix(cidr);
    BigInteger first = new BigInteger(1, address(cidr)).shiftRight(hostBits).shiftLeft(hostBits);
    BigInteger last = first.add(BigInteger.ONE.shiftLeft(hostBits)).subtract(BigInteger.ONE);
    return List.of(first, last, first.subtract(BigInteger.ONE), last.add(BigInteger.ONE));
  }

  /** Whether one of the rendered ipBlocks lets this address of {@code bits} bits through: in its cidr, in no except. */
  private static boolean allowed(List<Map<String, Object>> to, BigInteger address, int bits) {
    return to.stream().map(peer -> (Map<String, Object>) peer.get("ipBlock")).anyMatch(block ->
        in(List.of((String) block.get("cidr")), address, bits)
            && !in((List<String>) block.getOrDefault("except", List.of()), address, bits));
  }

  /** The public IPv6 range blocked-ranges.yaml gives ({@code ipv6Public}). */
  private static String publicIpv6() throws IOException {
    String source = Files.readString(HelmChart.CHART.resolve("policies/networkpolicies/blocked-ranges.yaml"));
    Matcher line = Pattern.compile("(?m)^ipv6Public: \"([^\"]+)\"$").matcher(source);
    assertTrue(line.find(), "blocked-ranges.yaml gives ipv6Public");
    return line.group(1);
  }

  /** The ranges of blocked-ranges.yaml's {@code $v4} and {@code $v6} lists, as written there. */
  static List<String> blockedRanges() throws IOException {
    String source = Files.readString(HelmChart.CHART.resolve("policies/networkpolicies/blocked-ranges.yaml"));
    List<String> ranges = new ArrayList<>();
    for (String family : List.of("v4", "v6")) {
      Matcher list = Pattern.compile("\\$" + family + " := list ([^}]+)}}").matcher(source);
      assertTrue(list.find(), "blocked-ranges.yaml sets $" + family);
      Matcher range = Pattern.compile("\"([^\"]+)\"").matcher(list.group(1));
      int before = ranges.size();
      while (range.find()) {
        ranges.add(range.group(1));
      }
      assertTrue(ranges.size() > before, "$" + family + " lists no range: " + list.group());
    }
    return ranges;
  }

  /** Whether one of the CIDRs holds this address of {@code bits} bits (32 or 128). */
  private static boolean in(List<String> cidrs, BigInteger address, int bits) {
    return cidrs.stream().anyMatch(cidr -> {
      byte[] net = address(cidr);
      int hostBits = bits - prefix(cidr);
      return net.length * 8 == bits
          && new BigInteger(1, net).shiftRight(hostBits).equals(address.shiftRight(hostBits));
    });
  }

  private static String show(BigInteger address, int bits) {
    byte[] value = address.toByteArray();
    byte[] bytes = new byte[bits / 8];
    int n = Math.min(value.length, bytes.length);
    System.arraycopy(value, value.length - n, bytes, bytes.length - n, n);
    try {
      return java.net.InetAddress.getByAddress(bytes).getHostAddress(); // no lookup
    } catch (java.net.UnknownHostException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void multicastAndBroadcastAreBlockedAndEveryExceptionIsAStrictSubsetOfItsBlock() {
    List<Map<String, Object>> to = at(DEFAULT.get("NetworkPolicy", "sandboxd-tool"), "spec", "egress", 0, "to");
    // Multicast (mDNS, SSDP, all-nodes), the limited broadcast (inside 240.0.0.0/4) and IPv6 multicast of every scope.
    for (String address : List.of("224.0.0.1", "224.0.0.251", "239.255.255.250", "255.255.255.255", "240.0.0.1",
        "ff02::1", "ff02::fb", "ff05::1:3", "ff0e::1")) {
      assertFalse(allowed(to, new BigInteger(1, address(address)), address(address).length * 8),
          address + " is not blocked: " + to);
    }
    assertTrue(allowed(to, new BigInteger(1, address("223.255.255.255")), 32), "the last unicast /8 stays open");
    // The API accepts an except entry only as a strict subset of its cidr: a longer prefix of the same family inside
    // it (it refuses ::ffff:0:0/96 in ::/0, which it reads as IPv4).
    for (Map<String, Object> peer : to) {
      String cidr = at(peer, "ipBlock", "cidr");
      for (String except : (List<String>) ((Map<String, Object>) peer.get("ipBlock")).getOrDefault("except", List.of())) {
        assertTrue(prefix(except) > prefix(cidr) && address(except).length == address(cidr).length
            && contains(cidr, except.substring(0, except.indexOf('/'))), except + " in " + cidr);
        assertFalse(except.startsWith("::ffff:"), except);
      }
    }
  }

  /** Whether the CIDR (a.b.c.d/n or IPv6) holds this address. */
  private static boolean contains(String cidr, String address) {
    byte[] net = address(cidr);
    byte[] ip = address(address);
    if (net.length != ip.length) {
      return false;
    }
    int bits = prefix(cidr);
    for (int i = 0; i < bits; i++) {
      int mask = 0x80 >> (i % 8);
      if ((net[i / 8] & mask) != (ip[i / 8] & mask)) {
        return false;
      }
    }
    return true;
  }

  private static int prefix(String cidr) {
    return Integer.parseInt(cidr.substring(cidr.indexOf('/') + 1));
  }

  private static byte[] address(String cidrOrAddress) {
    String literal = cidrOrAddress.contains("/") ? cidrOrAddress.substring(0, cidrOrAddress.indexOf('/')) : cidrOrAddress;
    assertTrue(literal.matches("[0-9a-fA-F:.]+"), literal + " is not an address literal");
    try {
      return java.net.InetAddress.getByName(literal).getAddress(); // a literal: no lookup
    } catch (java.net.UnknownHostException e) {
      throw new AssertionError(literal + " is not an address", e);
    }
  }

  @Test
  void extraBlockedCidrsJoinTheirFamilyAndIpv6CanBeTurnedOff() {
    Map<String, Object> np = HelmChart.render(values(
        "networkPolicy.extraBlockedCidrs[0]", "192.0.2.0/24",
        "networkPolicy.extraBlockedCidrs[1]", "2001:db8::/32",
        "networkPolicy.extraBlockedCidrs[2]", "fd12::/16")).get("NetworkPolicy", "sandboxd-tool");
    List<Map<String, Object>> to = at(np, "spec", "egress", 0, "to");
    assertEquals("192.0.2.0/24", ((List<?>) at(to.get(0), "ipBlock", "except")).getLast());
    // An IPv6 range inside the public one is its exception; one outside it (ULA) is blocked already, so no exception.
    assertEquals(List.of("2001:db8::/32"), at(to.get(1), "ipBlock", "except"));
    HelmChart.HelmFailure wide = assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("networkPolicy.extraBlockedCidrs[0]", "::/1")));
    assertTrue(wide.getMessage().contains("::/1 is wider than /3"), wide.getMessage());

    Map<String, Object> v4only = HelmChart.render(values("networkPolicy.ipv6", false)).get("NetworkPolicy", "sandboxd-tool");
    assertEquals(1, ((List<?>) at(v4only, "spec", "egress", 0, "to")).size());
  }

  @Test
  void sandboxdAcceptsAgentNamespacesAndItsOwnNamespaceOn8080() {
    Map<String, Object> np = DEFAULT.get("NetworkPolicy", "sandboxd");
    assertEquals("cai-system", (Object) at(np, "metadata", "namespace"));
    assertEquals(Map.of("matchLabels", Map.of("app.kubernetes.io/name", "sandboxd", "app.kubernetes.io/instance",
        "sandboxd")), at(np, "spec", "podSelector"));
    assertEquals(List.of(Map.of(
        "from", List.of(
            Map.of("namespaceSelector", Map.of("matchLabels", Map.of("sandboxd.io/client", "true"))),
            Map.of("namespaceSelector", Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "cai-system")))),
        "ports", PORT_8080)), at(np, "spec", "ingress"));
    assertEquals(List.of("Ingress"), (Object) at(np, "spec", "policyTypes"), "egress stays open without apiServerCidrs");
  }

  @Test
  void withApiServerCidrsSandboxdReachesOnlyTheApiServerItsSandboxesAndDns() {
    Map<String, Object> np = HelmChart.render(values("networkPolicy.apiServerCidrs[0]", "10.96.0.1/32",
        "networkPolicy.apiServerCidrs[1]", "192.0.2.2/32")).get("NetworkPolicy", "sandboxd");
    assertEquals(List.of("Ingress", "Egress"), (Object) at(np, "spec", "policyTypes"));
    List<Map<String, Object>> egress = at(np, "spec", "egress");
    assertEquals(List.of(Map.of("ipBlock", Map.of("cidr", "10.96.0.1/32")), Map.of("ipBlock", Map.of("cidr", "192.0.2.2/32"))),
        egress.get(0).get("to"));
    assertEquals(List.of(Map.of("protocol", "TCP", "port", 443L), Map.of("protocol", "TCP", "port", 6443L)),
        egress.get(0).get("ports"));
    assertEquals(List.of(Map.of("namespaceSelector", Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "cai-sandbox")),
        "podSelector", Map.of())), egress.get(1).get("to"));
    assertEquals(PORT_8080, egress.get(1).get("ports"));
    assertEquals(3, egress.size());
  }

  @Test
  void noPodOutsideSandboxdCarriesSandboxdsSelectorLabels() {
    // The sandbox NetworkPolicies trust these labels; the probe runner and the seccomp installer
    // must not have them (and the probe's sandbox pods must not claim managed-by=sandboxd).
    HelmChart.Rendered rendered = HelmChart.renderWithTestHooks(values("seccomp.localhostProfile.enabled", true));
    for (Map<String, Object> o : rendered.objects()) {
      Map<String, Object> podLabels = switch ((String) o.get("kind")) {
        case "Pod" -> at(o, "metadata", "labels");
        case "DaemonSet", "Deployment" -> at(o, "spec", "template", "metadata", "labels");
        default -> null;
      };
      if (podLabels != null && !"Deployment".equals(o.get("kind"))) {
        assertTrue(!"sandboxd".equals(podLabels.get("app.kubernetes.io/name")), o.get("kind") + " " + podLabels);
      }
    }
  }

  @Test
  void networkPoliciesCanBeDisabled() {
    assertEquals(List.of(), HelmChart.render(values("networkPolicy.enabled", false)).ofKind("NetworkPolicy"));
  }
}
