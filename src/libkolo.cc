// libkolo.so is the union of the layer libraries; this file only gives it an identity.
namespace kolo {
extern "C" const char* kolo_version() { return KOLO_VERSION_STRING; }  // from VERSION
}  // namespace kolo
