# fork_bomb: a process forks until it is refused, and then again, from a
# shell under `husk do --pids-limit 64` (pids/held.sh): every fork past the
# limit fails with EAGAIN, the shell survives, one limit.pids record.
source "$ATTACK_SRC/pids/held.sh"
bomb_held fork
