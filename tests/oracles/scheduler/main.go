// Command scheduler-oracle answers, for one incoming pod and a cluster, what kube-scheduler's
// real filter plugins say about every node: PodTopologySpread (PreFilter, then Filter per node),
// NodeAffinity (PreFilter, then Filter) and TaintToleration (Filter).
//
// It is the reference side of respread's differential tests (tests/oracles/). It is built by
// tests/oracles/scheduler/build.py inside a throwaway wrapper module that requires
// k8s.io/kubernetes at the tested release, so the plugin code is the release's own, unmodified.
//
// Input (stdin), one case or a JSON list of cases:
//
//	{"nodes": [v1.Node...], "pods": [v1.Pod... existing pods], "pod": v1.Pod (the incoming one)}
//
// Output (stdout), one answer per case, in the same shape (object or list):
//
//	{"nodes": {"<name>": {"spreadFilter": "Success|Unschedulable|UnschedulableAndUnresolvable",
//	                      "nodeAffinity": bool, "taintToleration": bool}}}
//
// With -serve it stays up instead: each input line is one case (or a list of cases) and gets
// one output line, its answer, or {"error": "..."}; this is how the differential tests avoid a
// process start per example.
//
// Each answer also has "spreadReasons" (the PodTopologySpread status reasons, per node that did
// not pass) and "features" (the gate values the plugins were built with), for diagnosis.
//
// The snapshot is built the way kube-scheduler's cache sees the cluster:
//
//   - Pods in phase Succeeded or Failed are dropped: the scheduler's pod informer lists pods
//     with the field selector status.phase!=Succeeded,status.phase!=Failed (newPodInformer in
//     pkg/scheduler/scheduler.go), so such pods never reach its cache.
//   - Terminating pods (metadata.deletionTimestamp set) are kept: they are in the cache, and it
//     is the plugin itself that skips them when counting.
//   - Unbound pods (no spec.nodeName) are dropped: the cache holds assigned pods only; pending
//     pods live in the scheduling queue. (Nominated pods are not modelled.)
//   - Pods bound to a node that is not in the input stay in the snapshot, as in the scheduler's
//     cache (a NodeInfo without a Node), but such NodeInfos are not in the node list the plugins
//     iterate over, exactly like the cache's snapshot, so they are counted nowhere.
//
// The plugins get default arguments, except that PodTopologySpread uses defaultingType List with
// no default constraints, so that only the pod's own constraints count. Feature gates are the
// release's defaults (k8s.io/kubernetes/pkg/features registered on the default gate).
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

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	_ "k8s.io/kubernetes/pkg/features" // registers the release's gates on the default gate
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Case is one question: the cluster and the pod to place.
type Case struct {
	Nodes []*v1.Node `json:"nodes"`
	Pods  []*v1.Pod  `json:"pods"`
	Pod   *v1.Pod    `json:"pod"`
}

// NodeVerdict is what the three filters say about one node.
type NodeVerdict struct {
	SpreadFilter    string `json:"spreadFilter"`
	NodeAffinity    bool   `json:"nodeAffinity"`
	TaintToleration bool   `json:"taintToleration"`
}

// Answer is the oracle's reply to one Case.
type Answer struct {
	Nodes         map[string]NodeVerdict `json:"nodes"`
	SpreadReasons map[string][]string    `json:"spreadReasons,omitempty"`
	Features      map[string]bool        `json:"features"`
}

func main() {
	// The framework records extension-point metrics; register them as the plugin tests do.
	metrics.Register()
	serveMode := flag.Bool("serve", false, "answer one JSON case per input line until EOF")
	flag.Parse()
	run := runOnce
	if *serveMode {
		run = serve
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "scheduler-oracle: %v\n", err)
		os.Exit(1)
	}
}

// runOnce reads one case or a list of cases from in and writes the answer(s) to out.
func runOnce(in io.Reader, out io.Writer) error {
	raw, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	reply, err := answer(raw)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(reply)
}

// serve answers each non-empty input line (a case or a list of cases) with one output line,
// flushed at once; a bad case gets {"error": ...} and the loop goes on.
func serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			reply, aerr := answer(line)
			if aerr != nil {
				reply = map[string]string{"error": aerr.Error()}
			}
			if eerr := enc.Encode(reply); eerr != nil {
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
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
}

// answer evaluates raw JSON holding one case (answered by an Answer) or a list of cases
// (answered by a list).
func answer(raw []byte) (any, error) {
	raw = bytes.TrimSpace(raw)
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	if len(raw) > 0 && raw[0] == '[' {
		var cases []Case
		if err := decodeStrict(raw, &cases); err != nil {
			return nil, err
		}
		answers := make([]*Answer, len(cases))
		for i := range cases {
			var err error
			if answers[i], err = evaluate(&cases[i], fts); err != nil {
				return nil, fmt.Errorf("case %d: %w", i, err)
			}
		}
		return answers, nil
	}
	var c Case
	if err := decodeStrict(raw, &c); err != nil {
		return nil, err
	}
	return evaluate(&c, fts)
}

// decodeStrict decodes JSON, rejecting unknown fields so that a mistyped field in a generated
// manifest fails loudly instead of being silently dropped on this side only.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding input: %w", err)
	}
	return nil
}

// evaluate runs the three filter plugins for c.Pod against every node of c.
func evaluate(c *Case, fts plfeature.Features) (*Answer, error) {
	if c.Pod == nil {
		return nil, fmt.Errorf(`no incoming "pod"`)
	}
	ctx := context.Background()

	// What the scheduler's cache would hold (see the package comment).
	var cached []*v1.Pod
	for _, p := range c.Pods {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			continue
		}
		cached = append(cached, p)
	}
	snapshot := cache.NewSnapshot(cached, c.Nodes)
	// The node list the framework iterates over: real nodes only, in input order. A NodeInfo
	// created for pods bound to an absent node has no Node and is left out, as in the cache.
	nodeInfos := make([]fwk.NodeInfo, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		ni, err := snapshot.NodeInfos().Get(n.Name)
		if err != nil {
			return nil, err
		}
		nodeInfos = append(nodeInfos, ni)
	}

	handle, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(snapshot))
	if err != nil {
		return nil, fmt.Errorf("creating the framework handle: %w", err)
	}
	spreadPl, err := podtopologyspread.New(ctx,
		&config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting}, handle, fts)
	if err != nil {
		return nil, fmt.Errorf("creating PodTopologySpread: %w", err)
	}
	affinityPl, err := nodeaffinity.New(ctx, &config.NodeAffinityArgs{}, handle, fts)
	if err != nil {
		return nil, fmt.Errorf("creating NodeAffinity: %w", err)
	}
	taintPl, err := tainttoleration.New(ctx, nil, handle, fts)
	if err != nil {
		return nil, fmt.Errorf("creating TaintToleration: %w", err)
	}
	spread := spreadPl.(preFilterAndFilter)
	affinity := affinityPl.(preFilterAndFilter)
	taint := taintPl.(framework.FilterPlugin)

	answer := &Answer{
		Nodes:         make(map[string]NodeVerdict, len(c.Nodes)),
		SpreadReasons: map[string][]string{},
		Features: map[string]bool{
			"NodeInclusionPolicyInPodTopologySpread": fts.EnableNodeInclusionPolicyInPodTopologySpread,
			"MatchLabelKeysInPodTopologySpread":      fts.EnableMatchLabelKeysInPodTopologySpread,
		},
	}

	// PodTopologySpread. Skip (no hard constraints) means the framework never calls its Filter:
	// every node passes. Any other non-success is an error in the input (e.g. a bad selector).
	spreadState := framework.NewCycleState()
	_, st := spread.PreFilter(ctx, spreadState, c.Pod, nodeInfos)
	spreadSkipped := st.IsSkip()
	if !spreadSkipped && !st.IsSuccess() {
		return nil, fmt.Errorf("PodTopologySpread PreFilter: %v", st.AsError())
	}

	// NodeAffinity: Skip (no nodeSelector, no required affinity) passes every node; a
	// PreFilterResult naming nodes (matchFields on metadata.name) rejects the others, as the
	// framework does; UnschedulableAndUnresolvable (conflicting names) rejects every node.
	affinityState := framework.NewCycleState()
	affinityResult, ast := affinity.PreFilter(ctx, affinityState, c.Pod, nodeInfos)
	affinitySkipped := ast.IsSkip()
	affinityRejectsAll := false
	switch {
	case affinitySkipped || ast.IsSuccess():
	case ast.Code() == fwk.UnschedulableAndUnresolvable:
		affinityRejectsAll = true
	default:
		return nil, fmt.Errorf("NodeAffinity PreFilter: %v", ast.AsError())
	}

	taintState := framework.NewCycleState()
	for _, ni := range nodeInfos {
		name := ni.Node().Name
		v := NodeVerdict{SpreadFilter: fwk.Success.String()}
		if !spreadSkipped {
			s := spread.Filter(ctx, spreadState, c.Pod, ni)
			v.SpreadFilter = s.Code().String()
			if !s.IsSuccess() {
				answer.SpreadReasons[name] = s.Reasons()
			}
		}
		switch {
		case affinitySkipped:
			v.NodeAffinity = true
		case affinityRejectsAll:
			v.NodeAffinity = false
		default:
			v.NodeAffinity = (affinityResult.AllNodes() || affinityResult.NodeNames.Has(name)) &&
				affinity.Filter(ctx, affinityState, c.Pod, ni).IsSuccess()
		}
		v.TaintToleration = taint.Filter(ctx, taintState, c.Pod, ni).IsSuccess()
		answer.Nodes[name] = v
	}
	return answer, nil
}

// preFilterAndFilter is a plugin with both extension points this program drives.
type preFilterAndFilter interface {
	framework.PreFilterPlugin
	framework.FilterPlugin
}

// Compile-time checks that the plugins still implement what this program calls.
var (
	_ preFilterAndFilter     = (*podtopologyspread.PodTopologySpread)(nil)
	_ preFilterAndFilter     = (*nodeaffinity.NodeAffinity)(nil)
	_ framework.FilterPlugin = (*tainttoleration.TaintToleration)(nil)
)
