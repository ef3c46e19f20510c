package docker

import (
	"context"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/client"
)

// composeClient is the engine client compose is given. Compose v2.40.3 asks
// the first engine of the process for its API version once and keeps the
// answer, or the error, for every engine after it (RuntimeVersion in
// pkg/compose/compose.go): with several hosts, whichever engine compose
// happened to reach first, dead or of another version, would decide for
// all. So every engine tells compose the same version, the oldest boxes
// accepts (Connect refuses older engines), without a call that could fail:
// compose then takes the code paths that work on every engine boxes talks
// to, whichever comes first.
type composeClient struct{ client.APIClient }

func (composeClient) ServerVersion(context.Context) (types.Version, error) {
	return types.Version{APIVersion: MinAPIVersion}, nil
}
