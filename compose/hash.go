package compose

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/compose-spec/compose-go/v2/types"
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
		h, err := serviceHash(s)
		if err != nil {
			return nil, fmt.Errorf("hashing service %s of %s: %w", name, p.Name, err)
		}
		hashes[name] = h
	}
	return hashes, nil
}

// serviceHash is docker/compose's ServiceHash, written here so that the
// planner does not link compose's engine (and the Docker and Kubernetes
// clients it brings) for one function; TestServiceHashes holds the two
// equal. It hashes the service's JSON without what compose leaves out of a
// container's identity: build, pull policy, scale, replicas, dependencies
// and profiles.
func serviceHash(s types.ServiceConfig) (string, error) {
	data, err := serviceJSON(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// serviceJSON is the JSON serviceHash hashes.
func serviceJSON(s types.ServiceConfig) ([]byte, error) {
	s.Build = nil
	s.PullPolicy = ""
	s.Scale = nil
	if s.Deploy != nil {
		d := *s.Deploy
		d.Replicas = nil
		s.Deploy = &d
	}
	s.DependsOn = nil
	s.Profiles = nil
	return json.Marshal(s)
}
