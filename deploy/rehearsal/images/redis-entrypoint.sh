#!/bin/sh
# The behaviour of redis:7.4.2-alpine's docker-entrypoint.sh (redis/docker-library-redis,
# 7.4/alpine/docker-entrypoint.sh), written again for the rehearsal's look-alike image.
set -e
# An option or a .conf file as the first argument: run redis-server with it.
case "$1" in
	-*|*.conf) set -- redis-server "$@" ;;
esac
# Started as root: own /data's files, then step down to the redis user and start again.
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
	find . \! -user redis -exec chown redis '{}' +
	exec gosu redis "$0" "$@"
fi
[ "$(umask)" = 0022 ] && umask 0077
exec "$@"
