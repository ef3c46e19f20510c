package spec

import (
	"os"
	"sort"

	"gopkg.in/yaml.v3"
)

// Names are the box and host names a boxes.yaml declares, sorted.
type Names struct{ Boxes, Hosts []string }

// ReadNames reads the box and host names of a boxes.yaml leniently: a file
// being edited still gives them, whatever else is wrong with it. A file that
// cannot be read gives none.
func ReadNames(file string) Names {
	var out Names
	data, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	top := doc.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		var into *[]string
		switch top[i].Value {
		case "boxes":
			into = &out.Boxes
		case "hosts":
			into = &out.Hosts
		default:
			continue
		}
		if m := top[i+1]; m.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(m.Content); j += 2 {
				*into = append(*into, m.Content[j].Value)
			}
		}
	}
	sort.Strings(out.Boxes)
	sort.Strings(out.Hosts)
	return out
}
