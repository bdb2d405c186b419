package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func toolPod(name, ip string, phase corev1.PodPhase, project string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "cai-sandbox"},
		Status:     corev1.PodStatus{PodIP: ip, Phase: phase},
	}
	if project != "" {
		pod.Annotations = map[string]string{"sandboxd.io/project": project}
	}
	return pod
}

func indexed(t *testing.T, pods ...*corev1.Pod) *podProjects {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byIP: podIP})
	for _, pod := range pods {
		if err := indexer.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	return &podProjects{indexer: indexer}
}

// A tool pod is called as soon as it answers, often while the kubelet still reports it Pending: its project is named.
func TestAPodNotYetReportedRunningIsNamed(t *testing.T) {
	p := indexed(t, toolPod("tool-a", "10.244.0.14", corev1.PodPending, "team-blue"))
	if project, pod := p.of("10.244.0.14"); project != "team-blue" || pod != "tool-a" {
		t.Fatalf("got %q %q", project, pod)
	}
}

// An ended pod keeps its address in its status; the pod holding the address now is the one named.
func TestAnEndedPodIsNotTakenForTheOneHoldingItsAddressNow(t *testing.T) {
	p := indexed(t, toolPod("tool-old", "10.244.0.14", corev1.PodSucceeded, "team-red"),
		toolPod("tool-new", "10.244.0.14", corev1.PodRunning, "team-blue"))
	if project, pod := p.of("10.244.0.14"); project != "team-blue" || pod != "tool-new" {
		t.Fatalf("got %q %q", project, pod)
	}
	p = indexed(t, toolPod("tool-old", "10.244.0.14", corev1.PodFailed, "team-red"))
	if project, pod := p.of("10.244.0.14"); project != "unknown" || pod != "" {
		t.Fatalf("an ended pod was named: %q %q", project, pod)
	}
}

func TestAnAddressOfNoToolPodAndAPodWithoutTheAnnotationAreUnknown(t *testing.T) {
	p := indexed(t, toolPod("tool-a", "10.244.0.15", corev1.PodRunning, ""))
	if project, pod := p.of("10.244.0.99"); project != "unknown" || pod != "" {
		t.Fatalf("got %q %q", project, pod)
	}
	if project, pod := p.of("10.244.0.15"); project != "unknown" || pod != "tool-a" {
		t.Fatalf("got %q %q", project, pod)
	}
}

// A pod being deleted still lists its address while the kubelet stops it; once the address is released a new pod may
// hold it. The deleted pod's project is not given to the address, whether or not the new pod is seen yet.
func TestAPodBeingDeletedNamesNoProjectForItsAddress(t *testing.T) {
	deleting := toolPod("tool-old", "10.244.0.14", corev1.PodRunning, "team-red")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	p := indexed(t, deleting)
	if project, pod := p.of("10.244.0.14"); project != "unknown" || pod != "" {
		t.Fatalf("a pod being deleted was named: %q %q", project, pod)
	}
	p = indexed(t, deleting, toolPod("tool-new", "10.244.0.14", corev1.PodPending, "team-blue"))
	if project, pod := p.of("10.244.0.14"); project != "team-blue" || pod != "tool-new" {
		t.Fatalf("got %q %q", project, pod)
	}
}
