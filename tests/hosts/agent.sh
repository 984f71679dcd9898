#!/usr/bin/env bash
# tests/hosts/agent.sh: Open MPI's launcher agent (plm_rsh_agent) for the hosts of
# tests/hosts/hosts.sh, in ssh's place: "agent.sh HOST COMMAND..." runs the command line, as a
# remote shell would, in HOST's namespaces. NSTH_DIR names the hosts' folder.
set -u
while [ "${1:-}" != "${1#-}" ]; do shift; done # ssh-style options, if any, mean nothing here
h=${1:?agent.sh: no host}; shift
exec "$(dirname "$0")/hosts.sh" exec "${NSTH_DIR:?agent.sh: NSTH_DIR is not set}" "$h" /bin/sh -c "$*"
