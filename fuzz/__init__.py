"""Fuzzing harness: random Relax graphs against numpy, mutated ONNX models, TVMScript, tvm-json
documents and exported executables, each case run in a worker subprocess so that a crash or a
hang is caught as a failure.  ``python -m fuzz --help``; docs/guarantees.md says what each
target checks."""
