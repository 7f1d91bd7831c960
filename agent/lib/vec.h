/* SPDX-License-Identifier: MIT */
/*
 * The growable array of drfd's: a pointer, a count kept by the caller, and a
 * capacity that doubles, so that n appends cost O(n) in all. Pure: no I/O.
 *
 *	if (DRF_VEC_GROW(v->t, &v->cap, v->n + 1) < 0)
 *		return -ENOMEM;
 *	v->t[v->n++] = x;
 */
#ifndef DRF_VEC_H
#define DRF_VEC_H

#include <stddef.h>

/* The capacity of an array's first allocation, unless more is needed at once. */
#define DRF_VEC_MIN 16

/*
 * Makes the array *ptr_addr (a pointer to the array's pointer, of any element
 * type, elem bytes an element) hold at least need elements: when *cap is less,
 * reallocated to DRF_VEC_MIN or twice *cap (again until it is enough), and
 * *cap set. 0, or -ENOMEM with the array and *cap as they were (a size that
 * overflows size_t is -ENOMEM too; elem 0 is -EINVAL). The new elements are
 * not initialized.
 */
int drf_vec_grow(void *ptr_addr, size_t *cap, size_t need, size_t elem);

/* drf_vec_grow() of the array p (an lvalue, such as v->t), its element size p's. */
#define DRF_VEC_GROW(p, cap, need) drf_vec_grow(&(p), (cap), (need), sizeof(*(p)))

#endif
