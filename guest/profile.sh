# shellcheck shell=sh
# /etc/profile.d/hermes-box.sh: the box's environment for login shells (tmux
# panes, `bash -l`). The containers get the same variables from the compose
# project; this file makes a login shell agree with them.

case ":$PATH:" in
*:/usr/local/bin:*) ;;
*) PATH=/usr/local/bin:$PATH ;;
esac
case ":$PATH:" in
*:/opt/hermes-box/bin:*) ;;
*) PATH=/opt/hermes-box/bin:$PATH ;;
esac
export PATH

# Everything the agent's tools keep lives in the box's volume under /data.
if [ "$(id -un 2>/dev/null)" = agent ]; then
	HOME=/data/home/agent
	export HOME
	export CLAUDE_CONFIG_DIR="${CLAUDE_CONFIG_DIR:-$HOME/.claude}"
	export CODEX_HOME="${CODEX_HOME:-$HOME/.codex}"
	export HERMES_HOME="${HERMES_HOME:-$HOME/.hermes}"
	export XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-$HOME/.config}"
	export XDG_DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
	export XDG_STATE_HOME="${XDG_STATE_HOME:-$HOME/.local/state}"
	export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}"
fi

# The image's tools are pinned by boxes.lock; they must not update themselves.
export DISABLE_AUTOUPDATER=1

# A prompt naming the box. hb init appends a line sourcing this file to a new
# ~/.bashrc, so the prompt survives the distribution's own bashrc.
if [ -n "${BASH_VERSION:-}" ] && [ -n "${PS1:-}" ]; then
	# Expanded when the prompt is shown, not now.
	# shellcheck disable=SC2016
	PS1='\[\e[1;36m\]${BOX_NAME:-box}\[\e[0m\] \u:\w\$ '
fi
