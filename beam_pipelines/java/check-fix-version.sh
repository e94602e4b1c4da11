#!/usr/bin/env bash
# Which released Beam Flink runners carry the fix for beam#31313 (apache/beam PR #33606)?
#
# For each version, fetch org.apache.beam:beam-runners-flink-<flink>:<version> from Maven Central into the
# stack's Maven repository and show, with javap -p, the FlinkSourceSplitEnumerator constructors and
# FlinkSource's createEnumerator/restoreEnumerator, then the bytecode of restoreEnumerator. The fix adds a
# constructor whose last parameter is `boolean splitsInitialized`, and restoreEnumerator passes `true`
# (iconst_1) to it through createEnumerator(context, boolean).
#
#   beam_pipelines/java/check-fix-version.sh [VERSION ...]     (default: 2.62.0 2.63.0 2.64.0 2.70.0)
#   FLINK=1.19 MAVEN_REPO=.stack/m2 beam_pipelines/java/check-fix-version.sh 2.62.0
set -euo pipefail

cd "$(dirname "$0")/../.."
FLINK="${FLINK:-1.19}"
MAVEN_REPO="${MAVEN_REPO:-.stack/m2}"
ARTIFACT="beam-runners-flink-${FLINK}"
PKG="org.apache.beam.runners.flink.translation.wrappers.streaming.io.source"
OUT=".stack/fix-version"
mkdir -p "$OUT"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(2.62.0 2.63.0 2.64.0 2.70.0)

for version in "${versions[@]}"; do
  echo "=== ${ARTIFACT}:${version}"
  jar="$OUT/${ARTIFACT}-${version}.jar"
  if [ ! -f "$jar" ] && ! mvn -B -q -Dmaven.repo.local="$MAVEN_REPO" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="org.apache.beam:${ARTIFACT}:${version}" -DoutputDirectory="$OUT" >/dev/null 2>&1; then
    echo "NOT AVAILABLE: org.apache.beam:${ARTIFACT}:${version} could not be downloaded from Maven Central"
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
