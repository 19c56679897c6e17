# queue_count.sh: sourced by shell tests that wait for messages on the queue $q (through
# $SQLQ_BIN queue stats) and report failures with their own fail().
now_ms() { date +%s%3N; }
# count: the queue's message count (0 while the queue service does not answer).
count() {
    local n
    n=$("$SQLQ_BIN" queue stats "$q" 2>/dev/null | grep -o '"approximate_count":[0-9]*' | head -1 | cut -d: -f2) || true
    echo "${n:-0}"
}
# wait_count N MAX_MS: until the queue holds N messages; prints the milliseconds it took.
wait_count() {
    local start n
    start=$(now_ms)
    while :; do
        n=$(count)
        [ "$n" -ge "$1" ] && { echo $(($(now_ms) - start)); return 0; }
        [ $(($(now_ms) - start)) -gt "$2" ] && fail "queue holds $n messages after $2 ms, wanted $1"
        sleep 0.02
    done
}
