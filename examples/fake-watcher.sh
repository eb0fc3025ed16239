#!/bin/sh
# A stand-in for a test watcher (vitest, jest --watch): clears the screen, animates a progress
# line, prints coloured results, then waits in raw mode for a key and quits on `q`.
printf '\033[2J\033[H'
for i in 1 2 3 4 5; do printf '\r\033[K running tests %d/5' "$i"; sleep 0.05; done
printf '\r\033[K \033[32m✓\033[0m math.test.js (3 tests)\n \033[31m✗\033[0m api.test.js (1 failed)\n'
printf '\n Tests  \033[31m1 failed\033[0m | \033[32m3 passed\033[0m\n\n Watching for file changes, press q to quit\n'
stty raw -echo
while :; do
  key=$(dd bs=1 count=1 2>/dev/null)
  [ "$key" = q ] && break
done
stty sane
echo bye
