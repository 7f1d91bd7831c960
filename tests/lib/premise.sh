#!/usr/bin/env bash
# Sourced by the tests that measure (tests/vm/lib.sh, tests/net/net.sh): a
# measurement is only as good as the conditions it assumed. Each measuring test
# states its premise (every tenant that should be backlogged was, the window was
# as long as it says, the load really ran) and checks it in the same window it
# measures. A window whose premise failed says nothing about drfd: it is
# reported and measured again; only a window whose premise held may pass or fail
# the test.
#
# The sourcing script defines check NAME COND DETAIL (PASS or FAIL) and
# premise_note LINE (a line in its results that is neither).
#
# measure NAME TRIES FUNC [ARG...]: runs FUNC ARG... up to TRIES times. FUNC
# measures one window and sets three variables:
#   premise  empty when the window's premise held, else why it did not
#   verdict  0 when the result is within its tolerance (read only if premise held)
#   detail   the figures measured, for the result line
# A window whose premise failed is reported as "DISCARD NAME (window I of
# TRIES): why; figures" and FUNC runs again. The first window whose premise
# held decides the test. When none held, the test fails: the machine did not
# let it measure, which CI must hear of, but not as a wrong result of drfd's
# (the line says "premise never held").
# shellcheck disable=SC2034 # premise, verdict and detail are FUNC's to set
measure() {
	# Its own names: FUNC's variables are not local to FUNC unless it says
	# so, and bash's scoping is dynamic: a FUNC that sets i would set ours.
	local _m_name=$1 _m_tries=$2 _m_try _m_why=
	shift 2
	for ((_m_try = 1; _m_try <= _m_tries; _m_try++)); do
		premise='' verdict=1 detail=''
		"$@"
		if [ -z "$premise" ]; then
			[ $_m_try -gt 1 ] && detail="$detail (window $_m_try of $_m_tries; earlier ones discarded)"
			check "$_m_name" "[ '$verdict' = 0 ]" "$detail"
			return
		fi
		premise_note "DISCARD $_m_name (window $_m_try of $_m_tries): premise failed: $premise; measured: $detail"
		_m_why="$_m_why${_m_why:+ | }$premise"
	done
	check "$_m_name" false "premise never held in $_m_tries windows: $_m_why"
}

# The host's vCPU waits (host_vcpu, host_waits, host_premise, host_judge).
# shellcheck source=tests/lib/vcpu.sh
. "$(dirname "${BASH_SOURCE[0]}")/vcpu.sh"
