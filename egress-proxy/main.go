// sandboxd-egress: the egress proxy of sandboxd's tool pods with an egress profile (D11). See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

func main() {
	configPath := flag.String("config", "/etc/sandboxd-egress/config.json", "the configuration file (JSON)")
	check := flag.Bool("check-config", false, "validate the configuration, print its profiles and exit")
	flag.Parse()
	config, err := LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxd-egress:", err)
		os.Exit(1)
	}
	if *check {
		for _, p := range config.Profiles {
			fmt.Printf("profile %s: port %d, hosts %v, ports %v\n", p.Name, p.Port, p.Hosts, p.Ports)
			for _, c := range p.Credentials {
				fmt.Printf("  credential %s: project %s, hosts %v, header %s, value from %s\n", c.Name, c.Project,
					c.Hosts, c.Header, c.File)
			}
		}
		fmt.Printf("limits: %+v\n", config.Limits.withDefaults())
		return
	}
	logger := logrus.New()
	logger.SetOutput(os.Stdout)
	logger.SetFormatter(&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano})
	stop := make(chan struct{})
	proxy, err := NewProxy(config, logger, nil, newProjects(config.Namespace, stop))
	if err != nil {
		logger.WithError(err).Fatal("cannot configure the proxy")
	}
	var listeners []net.Listener
	for _, p := range config.Profiles {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p.Port))
		if err != nil {
			logger.WithError(err).Fatalf("cannot listen for profile %s", p.Name)
		}
		listeners = append(listeners, l)
	}
	// /healthz beside smokescreen's /metrics on the metrics port: ready once every profile's listener is bound.
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	if err := proxy.sconfig.SetupPrometheus("/metrics", strconv.Itoa(config.MetricsPort), ""); err != nil {
		logger.WithError(err).Fatal("cannot serve metrics")
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		close(stop)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = proxy.Shutdown(ctx)
	}()
	logger.WithField("profiles", len(config.Profiles)).Info("serving")
	if err := proxy.Serve(listeners); err != nil {
		logger.WithError(err).Fatal("stopped")
	}
}
