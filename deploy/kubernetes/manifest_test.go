// Package kubernetes holds the manifests for running ratelimit on a
// cluster. It is a module of its own so that the Kubernetes API types its
// test decodes the manifests into stay out of the tool's dependencies.
package kubernetes

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// TestLoadJob decodes load-job.yaml strictly (an unknown or misspelt field
// is an error) into the batch/v1 Job type and checks what the segments
// rely on: an Indexed Job whose parallelism, completions and --segments
// agree, --segment k8s, one shared --start-at, the document on stdout,
// no retries of a segment, and a non-root, read-only container.
func TestLoadJob(t *testing.T) {
	data, err := os.ReadFile("load-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatalf("load-job.yaml is not a strict batch/v1 Job: %v", err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Errorf("apiVersion %q kind %q", job.APIVersion, job.Kind)
	}
	sp := job.Spec
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed (JOB_COMPLETION_INDEX is the segment)", sp.CompletionMode)
	}
	if sp.Completions == nil || sp.Parallelism == nil || *sp.Completions != *sp.Parallelism {
		t.Fatalf("completions %v, parallelism %v: every segment runs at once", sp.Completions, sp.Parallelism)
	}
	if sp.BackoffLimit == nil || *sp.BackoffLimit != 0 {
		t.Errorf("backoffLimit %v: a retried segment would run after the shared start", sp.BackoffLimit)
	}
	pod := sp.Template.Spec
	if pod.RestartPolicy != "Never" {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	args := c.Args
	if len(args) == 0 || args[0] != "load" {
		t.Fatalf("args %v, want ratelimit load ...", args)
	}
	flag := func(name string) (string, bool) {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	if v, _ := flag("segment"); v != "k8s" {
		t.Errorf("--segment=%q, want k8s", v)
	}
	n, _ := flag("segments")
	if got, err := strconv.Atoi(n); err != nil || int32(got) != *sp.Completions {
		t.Errorf("--segments=%q, completions %d: they must agree", n, *sp.Completions)
	}
	if v, _ := flag("start-at"); v == "" {
		t.Error("no --start-at: the segments would not start together")
	}
	if v, _ := flag("output"); v != "json" {
		t.Errorf("--output=%q, want json (each pod's document on stdout)", v)
	}
	for _, need := range []string{"target", "rate", "duration"} {
		if _, ok := flag(need); !ok {
			t.Errorf("no --%s", need)
		}
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the pod may run as root")
	}
	csc := c.SecurityContext
	if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
		csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v", csc)
	}
}

// TestLoadJobStrict: the decoding is strict, so a misspelt field fails
// the test instead of being dropped (the negative control of TestLoadJob).
func TestLoadJobStrict(t *testing.T) {
	data, err := os.ReadFile("load-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "completionMode: Indexed", "completionMod: Indexed", 1)
	if bad == string(data) {
		t.Fatal("the manifest has no completionMode to misspell")
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(bad), &job); err == nil {
		t.Error("a misspelt field was accepted")
	}
}
