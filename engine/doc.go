// Package engine is the contract between boxes' workflows and an engine
// that runs boxes, in boxes' own terms: what an engine observed (boxes'
// containers, volumes and networks with typed states and health, snapshots
// and lease marks), and the refusals the workflows branch on. An engine
// says what it observed in these types and nothing else: no workflow reads
// an engine's own text. Package docker is the Docker engine; the fake
// engine of the tests is another.
package engine
