#!/bin/sh
# The rehearsal's Redis look-alike: Debian's redis-server with protected mode off by default, as
# redis:7.4.2-alpine compiles it. A config file stays the first argument; later options win.
case "$1" in
	*.conf) conf=$1; shift; exec /usr/bin/redis-server "$conf" --protected-mode no "$@" ;;
esac
exec /usr/bin/redis-server --protected-mode no "$@"
