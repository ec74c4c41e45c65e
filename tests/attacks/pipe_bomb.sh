# pipe_bomb: fills thousands of pipes under `husk do --memory-mb 256`; what
# they queue together must stop near the limit with ENOMEM
# (memory/pipes.c), with the host's memory cgroup never acting.
source "$ATTACK_SRC/memory/capped.sh"
build pipes
capped_husk 256 "$ATTACK_TMP/pipes" 256
