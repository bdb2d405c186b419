#!/usr/bin/env bash
# Installs the Debian packages the single-node cluster and the image builds need. Idempotent.
set -euo pipefail
pkgs=(etcd-server containerd runc containernetworking-plugins iptables ipset conntrack socat python3-seccomp
      iproute2 nftables debootstrap umoci skopeo jq curl ca-certificates procps psmisc python3 libseccomp2
      buildah gnupg unzip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The packages must not start their own daemons: the harness runs them with its own config.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
echo "cluster packages present"
