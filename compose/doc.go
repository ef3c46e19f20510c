// Package compose turns one declared box into the compose project that runs it
// on Docker (design section 1). It never talks to Docker: the docker/compose
// library applies what Project returns, and ServiceHashes predicts the config
// hash it will write.
//
// Box NAME is project hbl-NAME with services agent and executor (containers
// hbl-NAME-agent-1 and hbl-NAME-executor-1), volumes hbl-NAME_agent-data and
// hbl-NAME_exec-data, and network hbl-NAME_default; names.go is the one place
// that spells these.
//
// Decisions the design leaves open:
//
//   - Limits are the service's cpus and mem_limit, which compose turns into
//     HostConfig.NanoCPUs and HostConfig.Memory; a box without them is
//     unlimited.
//   - A box's env: goes to the agent only. The variables boxes sets itself
//     (EXECUTOR_TOKEN, BOX_NAME, EXECUTOR_HOST, HOME, the tool and XDG
//     directories) cannot be overridden: Project refuses such a box rather
//     than run it with a surprise.
//   - The hostnames are "agent" and "executor"; BOX_NAME, in both
//     containers, says which box it is (box names need not be hostnames).
//   - The agent depends on the executor and the gate (started, not
//     restarted with them): they are made first, and an executor or gate
//     recreate leaves the agent's sessions alone. Starts are not ordered:
//     the engine starts all three at once.
//   - No tty or stdin_open on the agent: `boxes enter` gets its terminal from
//     `docker exec -it`.
//   - Both services stop with a 10 s grace period and are health-checked by
//     `hb health agent|executor` every 10 s (30 s start period).
//   - The project is loaded with an empty environment and no interpolation:
//     COMPOSE_* variables, .env and compose files beside boxes.yaml have no
//     effect, and a "$" in a box's env reaches the container as is;
//     printed projects (boxes compose) write it "$$" so that docker compose,
//     which does interpolate, reads the same value.
//   - Printed projects (YAML) show the token as <redacted>; a project built
//     with no token, for printing only, carries that placeholder instead.
//   - compose-go's loader runs once or twice for each shape of box (the
//     same settings, image and files), not for each box: the rest of a
//     shape's boxes are made from a template of it, their names, tokens,
//     ports and gates' values put in its placeholders (shapes.go), once the
//     template has given back the first box's own project exactly.
package compose
