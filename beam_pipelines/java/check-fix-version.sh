#!/usr/bin/env bash
# Which released Beam Flink runners carry the fix for beam#31313 (apache/beam PR #33606)?
#
# For each FLINK:VERSION pair, fetch org.apache.beam:beam-runners-flink-<flink>:<version> from Maven Central into the
# stack's Maven repository and show, with javap -p, the FlinkSourceSplitEnumerator constructors and
# FlinkSource's createEnumerator/restoreEnumerator, then the bytecode of restoreEnumerator. The fix adds a
# constructor whose last parameter is `boolean splitsInitialized`, and restoreEnumerator passes `true`
# (iconst_1) to it through createEnumerator(context, boolean).
#
#   beam_pipelines/java/check-fix-version.sh [FLINK:VERSION ...]
#       (default: 1.16:2.54.0 1.16:2.56.0 1.16:2.59.0 1.19:2.62.0 1.19:2.63.0 1.19:2.69.0 1.19:2.70.0)
#   MAVEN_REPO=.stack/m2 beam_pipelines/java/check-fix-version.sh 1.19:2.62.0
#
# A release the Maven repository this machine reaches does not have is reported as NOT REACHABLE HERE, never
# guessed: only the releases with a verdict are known to be affected or fixed.
set -euo pipefail

cd "$(dirname "$0")/../.."
MAVEN_REPO="${MAVEN_REPO:-.stack/m2}"
PKG="org.apache.beam.runners.flink.translation.wrappers.streaming.io.source"
OUT=".stack/fix-version"
mkdir -p "$OUT"
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(1.16:2.54.0 1.16:2.56.0 1.16:2.59.0 1.19:2.62.0 1.19:2.63.0 1.19:2.69.0 1.19:2.70.0)

for pair in "${pairs[@]}"; do
  FLINK="${pair%%:*}"
  version="${pair##*:}"
  ARTIFACT="beam-runners-flink-${FLINK}"
  echo "=== ${ARTIFACT}:${version}"
  jar="$OUT/${ARTIFACT}-${version}.jar"
  if [ ! -f "$jar" ] && ! mvn -B -q -Dmaven.repo.local="$MAVEN_REPO" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="org.apache.beam:${ARTIFACT}:${version}" -DoutputDirectory="$OUT" >/dev/null 2>&1; then
    echo "NOT REACHABLE HERE: org.apache.beam:${ARTIFACT}:${version} is not in the Maven repository this machine reaches"
    continue
  fi
  echo "--- javap -p ${PKG}.FlinkSourceSplitEnumerator (constructors)"
  javap -p -cp "$jar" "${PKG}.FlinkSourceSplitEnumerator" | grep -F " ${PKG}.FlinkSourceSplitEnumerator("
  echo "--- javap -p ${PKG}.FlinkSource (createEnumerator, restoreEnumerator)"
  javap -p -cp "$jar" "${PKG}.FlinkSource" | grep -E ' (createEnumerator|restoreEnumerator)\('
  echo "--- javap -c: body of restoreEnumerator(SplitEnumeratorContext, Map)"
  javap -c -p -cp "$jar" "${PKG}.FlinkSource" \
    | awk '/ restoreEnumerator\(org.apache.flink.api.connector.source.SplitEnumeratorContext<.*java.util.Map</ {on=1; next}
           on && /^$/ {exit} on && /Code:|invoke|iconst|new /'
  if javap -p -cp "$jar" "${PKG}.FlinkSourceSplitEnumerator" \
      | grep -qE " ${PKG}\.FlinkSourceSplitEnumerator\(.*, int, boolean\);"; then
    echo "VERDICT ${version}: FIXED (enumerator takes splitsInitialized; restore passes true)"
  else
    echo "VERDICT ${version}: AFFECTED (no splitsInitialized constructor; restore re-splits the source)"
  fi
done
