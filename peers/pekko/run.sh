#!/usr/bin/env bash
# Builds the Pekko peer if needed and runs one experiment:
#   peers/pekko/run.sh pingpong --msgs 2000000 --repeats 5
set -euo pipefail
cd "$(dirname "$0")"
jar=target/troupe-pekko-peer.jar
if [ ! -f "$jar" ] || [ -n "$(find src pom.xml -newer "$jar" -print -quit)" ]; then
    mvn -q -B package -DskipTests
fi
exec java -Xms1g -Xmx4g -jar "$jar" "$@"
