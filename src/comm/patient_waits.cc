#include "comm/patient_waits.h"

namespace kolo::comm {

namespace {
// The scope's state for this thread only: no other thread reads it.
thread_local bool patient = false;
}  // namespace

PatientWaits::PatientWaits() : outer_(patient) { patient = true; }

PatientWaits::~PatientWaits() { patient = outer_; }

bool PatientWaits::active() { return patient; }

}  // namespace kolo::comm
