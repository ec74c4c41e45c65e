# socket_bomb: fills thousands of Unix socketpairs and then loopback TCP
# connections under `husk do --memory-mb 256`; what they queue together must
# stay under the limit (memory/sockets.c), with the host's memory cgroup
# never acting.
source "$ATTACK_SRC/memory/capped.sh"
build sockets
capped_husk 256 "$ATTACK_TMP/sockets" 256
