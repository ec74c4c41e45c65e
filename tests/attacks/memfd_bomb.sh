# memfd_bomb: fills memfd past `husk do --memory-mb 256`; the writes must get
# ENOSPC near the limit and freed pages must be uncharged (memory/fill.c),
# with the host's memory cgroup never acting.
source "$ATTACK_SRC/memory/capped.sh"
build fill
capped_husk 256 "$ATTACK_TMP/fill" memfd 256
