# memory_bomb: a child touches anonymous memory without end under `husk do
# --memory-mb 256`; husk must OOM-kill it (SIGKILL) at the limit and the
# parent must live on (memory/anon.c), with the host's memory cgroup never
# acting.
source "$ATTACK_SRC/memory/capped.sh"
build anon
capped_husk 256 "$ATTACK_TMP/anon" 256
