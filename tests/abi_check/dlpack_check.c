/* Compiled as strict C99 with -pedantic -Werror: hookhost/dlpack.h must stay plain C. */
#include <hookhost/dlpack.h>

int hh_dlpack_check_round_trip(void);

int hh_dlpack_check_round_trip(void) {
  static const float values[6] = {1, 2, 3, 4, 5, 6};
  static const int64_t shape[2] = {3, 2};
  static const int64_t strides[2] = {1, 3};
  hh_tensor view;
  hh_tensor back;
  DLTensor tensor;
  hh_tensor_init(&view);
  view.name = "x";
  view.dtype = HH_DTYPE_F32;
  view.rank = 2;
  view.shape = shape;
  view.strides = strides;
  view.data = values;
  view.byte_size = sizeof values;
  if (!hh_tensor_to_dlpack(&view, &tensor)) return 0;
  if (!hh_tensor_from_dlpack(&tensor, "x", &back)) return 0;
  return back.data == view.data && hh_tensor_get_double(&back, 1) == 4.0;
}
