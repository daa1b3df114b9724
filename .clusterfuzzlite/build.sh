#!/bin/bash -eu
# Builds the five libFuzzer targets of tests/fuzz/ with ClusterFuzzLite's compiler and sanitizer
# flags, and installs each with its dictionary and seed corpus where the fuzzing service
# expects them (the service names that folder in the OUT variable).
cmake -S . -B build-cflite -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZFETCH_CUDA=OFF \
  -DZFETCH_FUZZERS=ON -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_CXX_FLAGS="$CXXFLAGS" -DBUILD_TESTING=ON
targets="scenario trace_reader ds_config timeline sweep_set"
for t in $targets; do
  cmake --build build-cflite --target "zfetch_${t}_fuzzer"
done
dest="${OUT}"
seeds() {
  case "$1" in
    scenario) echo scenarios tests/cli/scenarios ;;
    trace_reader) echo scenarios/real scenarios/seed tests/cli/traces ;;
    ds_config) echo tests/fuzz/corpus/ds_config ;;
    timeline) echo scenarios/calibration ;;
    sweep_set) echo tests/fuzz/corpus/sweep_set ;;
  esac
}
for t in $targets; do
  cp "build-cflite/tests/fuzz/zfetch_${t}_fuzzer" "$dest/"
  dict=tests/fuzz/$t.dict
  [ "$t" = trace_reader ] && dict=tests/fuzz/trace.dict
  cp "$dict" "$dest/zfetch_${t}_fuzzer.dict"
  # shellcheck disable=SC2046
  find $(seeds "$t") -type f -size -1M | zip -q -j "$dest/zfetch_${t}_fuzzer_seed_corpus.zip" -@
done
