#!/bin/bash
# firewall-watch.sh LOG: for make test's run, notes in LOG every Docker
# bridge on this machine whose rule letting its containers reach each
# other (-A FORWARD -i BR -o BR -j ACCEPT) is missing for over a second,
# and when it is back. Traffic inside a bridge passes iptables' FORWARD here
# (bridge-nf-call-iptables), whose policy is DROP: a bridge without that
# rule is a box whose agent cannot reach its own gate or executor. Another
# firewall manager rewriting FORWARD while Docker writes it can lose the
# rule. A bridge just made has no rule for a moment (Docker adds it after
# the link): only a second or more is noted. Runs until killed; each look
# forks two programs (iptables, ip), so that the watch itself costs the
# suite little processor time.
set -u
log=$1
declare -A since noted
while :; do
	rules=$(iptables -S FORWARD 2>/dev/null) || exit 0
	now=$EPOCHREALTIME
	for br in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '$2 ~ /^br-/ {print $2}'); do
		if [[ $rules == *"-A FORWARD -i $br -o $br -j ACCEPT"* ]]; then
			if [ -n "${noted[$br]:-}" ]; then
				echo "$(date +%T) $br: its rule is back" >>"$log"
			fi
			unset "since[$br]" "noted[$br]"
		elif [ -z "${since[$br]:-}" ]; then
			since[$br]=$now
		elif [ -z "${noted[$br]:-}" ] && awk -v a="${since[$br]}" -v b="$now" 'BEGIN { exit !(b - a > 1) }'; then
			noted[$br]=1
			net=$(docker network ls -q --no-trunc 2>/dev/null | grep "^${br#br-}" | head -n 1)
			echo "$(date +%T) $br (network $(docker network inspect -f '{{.Name}}' "$net" 2>/dev/null)): no rule letting its containers reach each other for over a second; FORWARD is:" >>"$log"
			while IFS= read -r line; do echo "    $line"; done <<<"$rules" >>"$log"
		fi
	done
	sleep 0.5
done
