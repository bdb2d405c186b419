package main

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkInjectedAgainstTunnelled is what adding a credential costs a call: the same GET to allowed.test through the
// proxy on loopback, tunnelled (team-b's tool: no credential, the tool's TLS goes to the upstream) and with team-a's
// credential added (the proxy's TLS each side, the request read, written anew, the response searched), one after the
// other in each iteration; on a new connection per call (CONNECT, TLS handshake, request: a tool's first call) and on a
// kept-alive one. It reports each one's p50 and p99 and the p50 and p99 added, in microseconds:
//
//	nice -n 19 go test -run '^$' -bench InjectedAgainstTunnelled -benchtime 1000x .
func BenchmarkInjectedAgainstTunnelled(b *testing.B) {
	f := startInjecting(b)
	sources := []string{"127.0.0.3", "127.0.0.2"} // tunnelled, injected
	for _, fresh := range []bool{true, false} {
		name := "kept-alive"
		if fresh {
			name = "new-connection"
		}
		b.Run(name, func(b *testing.B) {
			took := [2][]time.Duration{}
			var kept [2]*toolConn
			for i := 0; i < b.N; i++ {
				for mode, source := range sources {
					start := time.Now()
					c := kept[mode]
					if c == nil {
						var err error
						if c, err = f.open(b, source, "weather", "allowed.test", "allowed.test", nil); err != nil {
							b.Fatal(err)
						}
					}
					_ = c.raw.SetDeadline(time.Now().Add(5 * time.Second))
					c.send(b, f.get("allowed.test", "/bench"))
					if resp, _, err := c.answer(); err != nil || resp.StatusCode != 200 {
						b.Fatalf("%v %v", resp, err)
					}
					took[mode] = append(took[mode], time.Since(start))
					if fresh {
						c.raw.Close()
					} else {
						kept[mode] = c
					}
				}
			}
			b.StopTimer()
			p50, p99 := [2]float64{}, [2]float64{}
			for mode := range took {
				slices.Sort(took[mode])
				p50[mode] = float64(took[mode][len(took[mode])/2].Microseconds())
				p99[mode] = float64(took[mode][len(took[mode])*99/100].Microseconds())
			}
			b.ReportMetric(p50[0], "tunnelled-p50-us")
			b.ReportMetric(p99[0], "tunnelled-p99-us")
			b.ReportMetric(p50[1], "injected-p50-us")
			b.ReportMetric(p99[1], "injected-p99-us")
			b.ReportMetric(p50[1]-p50[0], "added-p50-us")
			b.ReportMetric(p99[1]-p99[0], "added-p99-us")
		})
	}
}
