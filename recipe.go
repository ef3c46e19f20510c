package boxes

import "embed"

// Recipe is the build context of the box image: docker/Dockerfile,
// provision/ and guest/, so that an installed boxes binary can build the image
// without the source tree. Build it with -f docker/Dockerfile from the root of
// this file system.
//
// embed keeps no file modes: written out, every file is a plain file, and the
// Dockerfile runs its scripts through bash and installs them with explicit
// modes. Write files 0644 and directories 0755, as scripts/test-image.sh does,
// so that builds from either share the layer cache.
//
//go:embed docker/Dockerfile provision guest
var Recipe embed.FS
