// Command yaml-oracle answers how kubectl reads and writes YAML: sigs.k8s.io/yaml (go-yaml v2
// underneath) and the document reader of `kubectl apply -f` and `kubectl create -f`
// (k8s.io/apimachinery's YAMLOrJSONDecoder), at the versions Kubernetes v1.34 uses.
//
// It is the reference side of tests/oracles/test_yaml_oracle.py; tests/oracles/yaml/build.py
// builds it (from the module cache or the Go module proxy). Each input line is a JSON request,
// each output line its answer:
//
//	{"op": "yaml2json", "text": "..."}  -> {"json": "..."} or {"error": "..."}   (YAMLToJSON)
//	{"op": "json2yaml", "text": "..."}  -> {"yaml": "..."} or {"error": "..."}   (JSONToYAML:
//	                                        what `kubectl get -o yaml` prints for that JSON)
//	{"op": "documents", "text": "..."}  -> {"documents": ["<json>", ...], "error": "..."}
//	                                        (each document of a stream, as kubectl -f reads it,
//	                                        up to the first error)
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type request struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

type answer struct {
	JSON      *string  `json:"json,omitempty"`
	YAML      *string  `json:"yaml,omitempty"`
	Documents []string `json:"documents,omitempty"`
	Error     string   `json:"error,omitempty"`
}

func documents(text string) answer {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
	out := answer{Documents: []string{}}
	for {
		ext := runtime.RawExtension{}
		if err := decoder.Decode(&ext); err != nil {
			if err != io.EOF {
				out.Error = err.Error()
			}
			return out
		}
		raw := bytes.TrimSpace(ext.Raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		out.Documents = append(out.Documents, string(raw))
	}
}

func serve(req request) answer {
	switch req.Op {
	case "yaml2json":
		j, err := yaml.YAMLToJSON([]byte(req.Text))
		if err != nil {
			return answer{Error: err.Error()}
		}
		s := string(j)
		return answer{JSON: &s}
	case "json2yaml":
		y, err := yaml.JSONToYAML([]byte(req.Text))
		if err != nil {
			return answer{Error: err.Error()}
		}
		s := string(y)
		return answer{YAML: &s}
	case "documents":
		return documents(req.Text)
	}
	return answer{Error: "unknown op " + req.Op}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<28)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans = answer{Error: "bad request: " + err.Error()}
		} else {
			ans = func() (a answer) {
				defer func() {
					if r := recover(); r != nil {
						a = answer{Error: fmt.Sprint("panic: ", r)}
					}
				}()
				return serve(req)
			}()
		}
		line, _ := json.Marshal(ans)
		out.Write(line)
		out.WriteByte('\n')
		out.Flush()
	}
}
