// Command descheduler-oracle runs the descheduler's real RemovePodsViolatingTopologySpreadConstraint
// plugin once over a cluster manifest and prints the evictions it made, as JSON.
//
// It is the reference side of respread's descheduler comparison (tests/oracles/ and
// bench/vs_descheduler.py). It is built by tests/oracles/descheduler/build.py inside a throwaway
// wrapper module that requires sigs.k8s.io/descheduler at the tested release, so the plugin, the
// DefaultEvictor and the PodEvictor are the release's own, unmodified.
//
// Input: a cluster manifest, `kind: List` JSON as `kubectl get -o json` writes it (Nodes, Pods,
// PodDisruptionBudgets, ReplicaSets, Namespaces, ...; kinds client-go does not know are skipped
// and counted, and so is a second object of the same kind, namespace and name). Plugin
// arguments are RemovePodsViolatingTopologySpreadConstraintArgs as JSON:
//
//	{"constraints": ["DoNotSchedule", "ScheduleAnyway"], "topologyBalanceNodeFit": true,
//	 "namespaces": {"include": [...], "exclude": [...]}, "labelSelector": {...}}
//
// defaulted and validated by the plugin's own functions. The DefaultEvictor gets its default
// arguments unless DefaultEvictorArgs are given (-evictor, or "evictor" in a request), as the
// plugin's unit tests set nodeFit.
//
//	descheduler-oracle -manifest cluster.json -args '{"constraints":["DoNotSchedule"]}' -runs 3
//	descheduler-oracle -serve   # a request per stdin line: {"manifest": List, "args": {}, "evictor": {}, "runs": N}
//
// Output: one JSON object (one line per request with -serve; {"error": "..."} on a bad one):
//
//	{"version": "...", "loadNs": N, "objects": {"Pod": N, ...}, "skipped": {"Kind": N},
//	 "readyNodes": N,
//	 "runs": [{"balanceNs": N, "evictions": [{"namespace", "name", "node"}...],
//	           "refused": [{"namespace", "name", "node", "reason"}...]}]}
//
// Each run builds a fresh fake clientset (k8s.io/client-go/kubernetes/fake) holding the objects,
// starts and syncs its informers, and sets up the framework handle, the DefaultEvictor (default
// arguments) and the PodEvictor (no limits) with the descheduler's own test helper
// (pkg/framework/testing.InitFrameworkHandle, as the plugin's unit tests do); all of that is
// loading. balanceNs is the wall time of the Balance call alone. Runs differ only where the
// plugin iterates Go maps (namespaces, domains, the eviction set), so their evictions may differ.
//
// Pods are listed per node in name order, as in the plugin's unit tests (the real descheduler
// lists them from an informer index in no defined order). Balance gets the Ready nodes, as the
// descheduler's loop passes them (pkg/descheduler/node.IsReady).
//
// The fake clientset does not implement the eviction subresource's budget check, so a reactor
// stands in for kube-apiserver's (pkg/registry/core/pod/storage/eviction.go, simplified): a pod
// that is terminal, pending or already terminating is evicted without a budget check; more than
// one matching PodDisruptionBudget refuses (500); a budget whose status is stale
// (observedGeneration < generation) or allows no disruption refuses (429); otherwise the
// eviction succeeds and the budget's disruptionsAllowed is decremented for the rest of the run.
// Refused evictions are listed under "refused" and do not count as evictions. Objects without a
// metadata.uid get a stable one (kube-apiserver assigns one to every object, and the PodEvictor
// refuses to evict a pod without it).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clientgotesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	nodeutil "sigs.k8s.io/descheduler/pkg/descheduler/node"
	"sigs.k8s.io/descheduler/pkg/framework/plugins/defaultevictor"
	spread "sigs.k8s.io/descheduler/pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint"
	frameworktesting "sigs.k8s.io/descheduler/pkg/framework/testing"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"
)

// version is set at build time (-ldflags -X main.version=...).
var version = "unknown"

// Eviction is one pod the plugin evicted (or tried to).
type Eviction struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Reason    string `json:"reason,omitempty"`
}

// Run is one Balance call.
type Run struct {
	BalanceNs int64      `json:"balanceNs"`
	Evictions []Eviction `json:"evictions"`
	Refused   []Eviction `json:"refused"`
}

// Answer is the reply to one request.
type Answer struct {
	Version    string         `json:"version"`
	LoadNs     int64          `json:"loadNs"`
	Objects    map[string]int `json:"objects"`
	Skipped    map[string]int `json:"skipped"`
	ReadyNodes int            `json:"readyNodes"`
	Runs       []Run          `json:"runs"`
}

// Request is one -serve line.
type Request struct {
	Manifest json.RawMessage `json:"manifest"`
	Args     json.RawMessage `json:"args"`
	Evictor  json.RawMessage `json:"evictor"`
	Runs     int             `json:"runs"`
}

func main() {
	if os.Getenv("DESCHEDULER_ORACLE_DEBUG") == "" {
		klog.SetLogger(logr.Discard()) // the plugin logs every decision; keep stdout/stderr clean
	} else {
		fs := flag.NewFlagSet("klog", flag.ExitOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", os.Getenv("DESCHEDULER_ORACLE_DEBUG"))
	}
	serveMode := flag.Bool("serve", false, "answer one JSON request per input line until EOF")
	manifest := flag.String("manifest", "-", "the cluster manifest (kind: List JSON); - for stdin")
	args := flag.String("args", "{}", "RemovePodsViolatingTopologySpreadConstraintArgs as JSON")
	evictor := flag.String("evictor", "{}", "DefaultEvictorArgs as JSON")
	runs := flag.Int("runs", 1, "how many independent Balance runs")
	flag.Parse()
	var err error
	if *serveMode {
		err = serve(os.Stdin, os.Stdout)
	} else {
		err = runFile(*manifest, []byte(*args), []byte(*evictor), *runs, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "descheduler-oracle: %v\n", err)
		os.Exit(1)
	}
}

func runFile(path string, rawArgs, rawEvictor []byte, runs int, out io.Writer) error {
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	start := time.Now()
	objs, counts, skipped, err := decodeList(bufio.NewReaderSize(in, 1<<20))
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "descheduler-oracle: decoded %d objects in %.1fs\n",
		len(objs), time.Since(start).Seconds())
	answer, err := balance(objs, rawArgs, rawEvictor, runs, time.Since(start))
	if err != nil {
		return err
	}
	answer.Objects, answer.Skipped = counts, skipped
	return json.NewEncoder(out).Encode(answer)
}

func serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriter(out)
	for {
		line, err := reader.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			reply := any(nil)
			answer, aerr := handle(line)
			if aerr != nil {
				reply = map[string]string{"error": aerr.Error()}
			} else {
				reply = answer
			}
			if eerr := json.NewEncoder(w).Encode(reply); eerr != nil {
				return eerr
			}
			if ferr := w.Flush(); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func handle(line []byte) (*Answer, error) {
	start := time.Now()
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, fmt.Errorf("bad request: %w", err)
	}
	objs, counts, skipped, err := decodeList(bytes.NewReader(req.Manifest))
	if err != nil {
		return nil, err
	}
	if len(req.Args) == 0 {
		req.Args = []byte("{}")
	}
	if len(req.Evictor) == 0 {
		req.Evictor = []byte("{}")
	}
	answer, err := balance(objs, req.Args, req.Evictor, max(req.Runs, 1), time.Since(start))
	if err != nil {
		return nil, err
	}
	answer.Objects, answer.Skipped = counts, skipped
	return answer, nil
}

// decodeList streams a `kind: List` (or a bare JSON array of objects) into typed objects.
func decodeList(in io.Reader) ([]runtime.Object, map[string]int, map[string]int, error) {
	dec := json.NewDecoder(in)
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, nil, err
	}
	if tok == json.Delim('{') {
		for { // find "items"
			key, err := dec.Token()
			if err != nil {
				return nil, nil, nil, err
			}
			if key == json.Delim('}') {
				return nil, nil, nil, errors.New("the manifest has no items")
			}
			if key == "items" {
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, nil, err
			}
		}
		if tok, err = dec.Token(); err != nil {
			return nil, nil, nil, err
		}
	}
	if tok != json.Delim('[') {
		return nil, nil, nil, errors.New("want a kind: List object or a JSON array")
	}
	deserializer := scheme.Codecs.UniversalDeserializer()
	var objs []runtime.Object
	counts, skipped := map[string]int{}, map[string]int{}
	seen := map[[3]string]bool{}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, nil, err
		}
		obj, gvk, err := deserializer.Decode(raw, nil, nil)
		if err != nil {
			kind := "unknown"
			if gvk != nil {
				kind = gvk.Kind
			}
			skipped[kind]++
			continue
		}
		// kube-apiserver gives every object a UID, and the PodEvictor refuses pods without one;
		// a manifest written by hand may lack them, so supply a stable one.
		if m, err := meta.Accessor(obj); err == nil {
			// An API server holds one object per kind, namespace and name: keep the first.
			key := [3]string{gvk.Kind, m.GetNamespace(), m.GetName()}
			if seen[key] {
				skipped["duplicate "+gvk.Kind]++
				continue
			}
			seen[key] = true
			if m.GetUID() == "" {
				m.SetUID(types.UID(fmt.Sprintf("oracle-%s-%s-%s", gvk.Kind, m.GetNamespace(), m.GetName())))
			}
		}
		counts[gvk.Kind]++
		objs = append(objs, obj)
	}
	return objs, counts, skipped, nil
}

func balance(objs []runtime.Object, rawArgs, rawEvictor []byte, runs int, decoding time.Duration) (*Answer, error) {
	args := &spread.RemovePodsViolatingTopologySpreadConstraintArgs{}
	if err := json.Unmarshal(rawArgs, args); err != nil {
		return nil, fmt.Errorf("bad plugin args: %w", err)
	}
	evictorArgs := defaultevictor.DefaultEvictorArgs{}
	if err := json.Unmarshal(rawEvictor, &evictorArgs); err != nil {
		return nil, fmt.Errorf("bad evictor args: %w", err)
	}
	spread.SetDefaults_RemovePodsViolatingTopologySpreadConstraintArgs(args)
	if err := spread.ValidateRemovePodsViolatingTopologySpreadConstraintArgs(args); err != nil {
		return nil, fmt.Errorf("invalid plugin args: %w", err)
	}
	var nodes []*v1.Node
	for _, obj := range objs {
		if n, ok := obj.(*v1.Node); ok && nodeutil.IsReady(n) {
			nodes = append(nodes, n)
		}
	}
	answer := &Answer{Version: version, ReadyNodes: len(nodes)}
	var loading time.Duration
	for r := 0; r < runs; r++ {
		run, load, err := runOnce(objs, nodes, args, evictorArgs)
		if err != nil {
			return nil, err
		}
		loading += load
		answer.Runs = append(answer.Runs, run)
	}
	answer.LoadNs = int64(decoding + loading/time.Duration(runs))
	return answer, nil
}

func runOnce(
	objs []runtime.Object, nodes []*v1.Node,
	args *spread.RemovePodsViolatingTopologySpreadConstraintArgs, evictorArgs defaultevictor.DefaultEvictorArgs,
) (Run, time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(objs...)
	run := Run{Evictions: []Eviction{}, Refused: []Eviction{}}
	client.PrependReactor("create", "pods", evictionReactor(objs, &run))
	handle, _, err := frameworktesting.InitFrameworkHandle(
		ctx, client, nil, evictorArgs,
		func(pods []*v1.Pod) { sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name }) },
	)
	if err != nil {
		return run, 0, fmt.Errorf("framework handle: %w", err)
	}
	plugin, err := spread.New(ctx, args, handle)
	if err != nil {
		return run, 0, fmt.Errorf("plugin: %w", err)
	}
	loading := time.Since(start)
	t0 := time.Now()
	status := plugin.(frameworktypes.BalancePlugin).Balance(ctx, nodes)
	run.BalanceNs = time.Since(t0).Nanoseconds()
	if status != nil && status.Err != nil {
		return run, 0, fmt.Errorf("Balance: %w", status.Err)
	}
	return run, loading, nil
}

// evictionReactor stands in for kube-apiserver's eviction subresource (see the package comment).
func evictionReactor(objs []runtime.Object, run *Run) clientgotesting.ReactionFunc {
	pods := map[[2]string]*v1.Pod{}
	budgets := map[string][]*policyv1.PodDisruptionBudget{}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v1.Pod:
			pods[[2]string{o.Namespace, o.Name}] = o
		case *policyv1.PodDisruptionBudget:
			budgets[o.Namespace] = append(budgets[o.Namespace], o.DeepCopy())
		}
	}
	gone := map[[2]string]bool{}
	resource := schema.GroupResource{Resource: "pods"}
	return func(action clientgotesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		create, ok := action.(clientgotesting.CreateActionImpl)
		if !ok {
			return true, nil, fmt.Errorf("unexpected eviction action %T", action)
		}
		ev, ok := create.Object.(*policyv1.Eviction)
		if !ok {
			return true, nil, fmt.Errorf("unexpected eviction object %T", create.Object)
		}
		key := [2]string{ev.Namespace, ev.Name}
		pod := pods[key]
		if pod == nil || gone[key] {
			return true, nil, apierrors.NewNotFound(resource, ev.Name)
		}
		refuse := func(err error) (bool, runtime.Object, error) {
			run.Refused = append(run.Refused, Eviction{pod.Namespace, pod.Name, pod.Spec.NodeName, err.Error()})
			return true, nil, err
		}
		checked := pod.Status.Phase == v1.PodRunning && pod.DeletionTimestamp == nil
		if checked {
			var matching []*policyv1.PodDisruptionBudget
			for _, pdb := range budgets[pod.Namespace] {
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				matching = append(matching, pdb)
			}
			if len(matching) > 1 {
				return refuse(apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget")))
			}
			if len(matching) == 1 {
				pdb := matching[0]
				switch {
				case pdb.Status.ObservedGeneration < pdb.Generation:
					return refuse(apierrors.NewTooManyRequests("the disruption budget "+pdb.Name+" is still being processed", 10))
				case pdb.Status.DisruptionsAllowed <= 0:
					return refuse(apierrors.NewTooManyRequests("cannot evict pod as it would violate the pod's disruption budget "+pdb.Name, 10))
				}
				pdb.Status.DisruptionsAllowed--
			}
		}
		gone[key] = true
		run.Evictions = append(run.Evictions, Eviction{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName})
		return true, nil, nil
	}
}
