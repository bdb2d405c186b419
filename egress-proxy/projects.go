package main

import (
	"log"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// projects names the project of a tool pod by its address, for the log: never from the client, which could say
// anything, but from the pod sandboxd created (annotation sandboxd.io/project, set when a call claims the pod).
type projects interface {
	of(ip string) (project, pod string)
}

type noProjects struct{}

func (noProjects) of(string) (string, string) { return "unknown", "" }

// podProjects watches the tool pods of the sandbox namespace (an informer: list, then watch) and indexes them by IP.
type podProjects struct {
	indexer cache.Indexer
}

const byIP = "ip"

// newProjects watches the namespace's tool pods when running in a cluster; elsewhere (tests) every project is unknown.
func newProjects(namespace string, stop <-chan struct{}) projects {
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		log.Printf("egress proxy: not in a cluster: projects are logged as unknown")
		return noProjects{}
	}
	config, err := rest.InClusterConfig()
	if err != nil {
		log.Printf("egress proxy: no in-cluster configuration (%v): projects are logged as unknown", err)
		return noProjects{}
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		log.Printf("egress proxy: no Kubernetes client (%v): projects are logged as unknown", err)
		return noProjects{}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "sandboxd.io/kind=tool" }))
	informer := factory.Core().V1().Pods().Informer()
	if err := informer.AddIndexers(cache.Indexers{byIP: podIP}); err != nil {
		log.Printf("egress proxy: %v: projects are logged as unknown", err)
		return noProjects{}
	}
	factory.Start(stop)
	go func() {
		if cache.WaitForCacheSync(stop, informer.HasSynced) {
			log.Printf("egress proxy: watching the tool pods of %s for their projects", namespace)
		}
	}()
	return &podProjects{indexer: informer.GetIndexer()}
}

// podIP indexes a pod by the address in its status.
func podIP(obj interface{}) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Status.PodIP != "" {
		return []string{pod.Status.PodIP}, nil
	}
	return nil, nil
}

// of names the pod that holds ip now: one not yet ended (a pod that ended keeps its address in its status, which a
// new pod may hold again) and not being deleted (its deletionTimestamp set: its address is about to be released, and
// once released it may be given to a new pod while this one is still listed). Not only a Running one: sandboxd calls
// a tool pod as soon as it answers, often before the kubelet has reported it Running, so the pod making the
// connection may still read Pending.
func (p *podProjects) of(ip string) (string, string) {
	objects, err := p.indexer.ByIndex(byIP, ip)
	if err != nil {
		return "unknown", ""
	}
	for _, obj := range objects {
		pod := obj.(*corev1.Pod)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
			pod.DeletionTimestamp != nil {
			continue
		}
		if project := pod.Annotations["sandboxd.io/project"]; project != "" {
			return project, pod.Name
		}
		return "unknown", pod.Name
	}
	return "unknown", ""
}
