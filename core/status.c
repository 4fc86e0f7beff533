#include "tangram/status.h"

const char *tg_status_string(tg_status status) {
  switch (status) {
#define TG_STATUS_CASE_(name, value, text) \
  case name:                               \
    return text;
    TG_STATUS_LIST(TG_STATUS_CASE_)
#undef TG_STATUS_CASE_
  }
  return "unknown status";
}

const char *tg_status_name(tg_status status) {
  switch (status) {
#define TG_STATUS_CASE_(name, value, text) \
  case name:                               \
    return #name;
    TG_STATUS_LIST(TG_STATUS_CASE_)
#undef TG_STATUS_CASE_
  }
  return "TG_UNKNOWN";
}
