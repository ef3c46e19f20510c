// Command boxes keeps a fleet of agent boxes on Docker in the state declared in boxes.yaml.
package main

import (
	"os"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
)

func main() {
	os.Exit(cli.Main(cli.StdStreams(), os.Args[1:]))
}
