#!/bin/sh
# /usr/bin/linegate: the command from the package's venv (postinst builds it from /opt/linegate/wheels).
exec /opt/linegate/venv/bin/linegate "$@"
