// What the checkpoint certification tests (test/ckpt/certification_test.cc, ckpt_trial_test.cc)
// feed the real Certifier (observer/ckpt/certifier.h): synthetic passes of one agreeing
// collective, and the options of a certification that a test drives pass by pass.
#pragma once

#include <cstdint>
#include <string>

#include "observer/ckpt/certifier.h"
#include "observer/detect/op_judge.h"

namespace scout::testing {

// What one pass judged: one AllReduce (seqNumber `seq`, 1000 bytes) of the 4-rank communicator
// "tp0" (commHash 0x11) whose first rank arrived at `t` (wall clock, ns), reported by all 4
// ranks, fingerprints agreeing.
obs::JudgeOutput agreeing_op_at(int64_t t, uint64_t seq);

// Certification of job "j" over the checkpoint root `root`: the root scanned at every pass (no
// inotify, no poll interval), check cycles of 1 s, K = 2, certificates written to `cert_dir`.
ckpt::CertifierOptions certifier_options_for_test(const std::string& root, const std::string& cert_dir);

}  // namespace scout::testing
