#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| airlock_manifest::fuzzing::audit_records(data));
