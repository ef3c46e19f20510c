// Command boxes keeps a fleet of agent boxes on Docker in the state declared in boxes.yaml.
package main

import (
	"os"
	"time"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
	"github.com/hermes-box/boxes/internal/gcstart"
)

func main() {
	time.AfterFunc(gcstart.StartFor, gcstart.Settle)
	os.Exit(cli.Main(cli.StdStreams(), os.Args[1:]))
}
