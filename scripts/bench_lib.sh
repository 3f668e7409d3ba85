# Helpers the benchmark scripts source: a free ephemeral port, a process's CPU ticks, ticks per
# second, a median. Not meant to run on its own.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# User + system CPU ticks of process $1 so far (fields 14 and 15 of /proc/<pid>/stat).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# Median of the numbers on stdin, separated by spaces or newlines (the lower middle one when
# their count is even).
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
