package compose

import (
	"fmt"

	"github.com/compose-spec/compose-go/v2/types"
	dcompose "github.com/docker/compose/v2/pkg/compose"
)

// ServiceHashes returns, for each service of p, the config hash docker/compose
// writes as the com.docker.compose.config-hash label of the containers it
// creates from p, and compares with to decide whether to recreate them.
//
// The library hashes the service exactly as it is in the project it is given:
// what it adds on the way (the com.docker.compose.image digest and the other
// CustomLabels) is not serialised, and it rewrites only service: references
// (volumes_from, network_mode, ipc, pid) that these projects do not use. So
// the prediction holds for the very project passed to Up, token included: the
// token is in the environment, and the environment is in the hash.
func ServiceHashes(p *types.Project) (map[string]string, error) {
	hashes := make(map[string]string, len(p.Services))
	for name, s := range p.Services {
		// ServiceHash clears Deploy.Replicas through the pointer it is given.
		if s.Deploy != nil {
			d := *s.Deploy
			s.Deploy = &d
		}
		h, err := dcompose.ServiceHash(s)
		if err != nil {
			return nil, fmt.Errorf("hashing service %s of %s: %w", name, p.Name, err)
		}
		hashes[name] = h
	}
	return hashes, nil
}
