# wait_log.sh: sourced by shell tests that wait for a line in a log file.
# wait_log FILE PATTERN [TENTHS]: until FILE has a line matching PATTERN (grep), checking every
# 0.1 s, TENTHS times (default 100), then once more; returns 1 when it never came.
wait_log() {
    local _i
    for _i in $(seq 1 "${3:-100}"); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    grep -q "$2" "$1" 2>/dev/null
}
