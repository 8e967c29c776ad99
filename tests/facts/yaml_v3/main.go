// Command yamlv3 prints, for each YAML text in a JSON list on stdin, what gopkg.in/yaml.v3 v3.0.1 decodes it to
// as Pulumi hands it on (keys as fmt's %v, times as Time.String(), then encoding/json), or yaml.v3's error.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

type result struct {
	Text  string `json:"text"`
	Value any    `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// pulumiValue mirrors sdk/go/common/resource/config/object.go: map keys as %v, a time.Time as its String().
func pulumiValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = pulumiValue(x)
		}
		return out
	case map[any]any:
		out := map[string]any{}
		for k, x := range v {
			out[fmt.Sprintf("%v", k)] = pulumiValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = pulumiValue(x)
		}
		return out
	case time.Time:
		return v.String()
	}
	return v
}

func main() {
	var texts []string
	if err := json.NewDecoder(os.Stdin).Decode(&texts); err != nil {
		panic(err)
	}
	results := []result{}
	for _, text := range texts {
		var doc any
		r := result{Text: text}
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			r.Error = err.Error()
		} else if b, err := json.Marshal(pulumiValue(doc)); err != nil {
			r.Error = "json: " + err.Error()
		} else {
			r.Value = json.RawMessage(b)
		}
		results = append(results, r)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	out.SetEscapeHTML(false)
	if err := out.Encode(results); err != nil {
		panic(err)
	}
}
