/* Datasets from folders of class folders (dir/<class>/<image>), as Keras's
 * image_dataset_from_directory and PyTorch's ImageFolder read them. The
 * rules are those of clt_dataset_load_folder (cltrain.h). */
#ifndef CLT_DATA_FOLDER_H
#define CLT_DATA_FOLDER_H

#include "data/dataset.h"

/* Reads dir into *out (empty on failure); errors name the folder or the
 * file: CLT_ERR_IO, CLT_ERR_FORMAT (a corrupt image, no images, a class
 * unknown to o->class_names or beyond o->num_classes), CLT_ERR_SHAPE (an
 * image of another size without o->resize), CLT_ERR_UNSUPPORTED (a PNG or
 * JPEG and no decoder installed, a JPEG where the decoder lacks libjpeg),
 * CLT_ERR_INVALID_ARGUMENT (no shape in o). */
clt_status clt_folder_read(const char *dir, const clt_data_options *o,
                           clt_dataset *out, clt_err *err);

/* The class folder names of dir, sorted (what clt_folder_read uses without
 * o->class_names). The caller frees them with clt_class_names_free. */
clt_status clt_folder_classes(const char *dir, char ***names, int *count,
                              clt_err *err);

#endif
