/* A lower bound for objects plans from the linear programme over objects (the "LP bound").
 *
 * An objects plan splits the records into objects; each object is a set of pairwise
 * time-disjoint records (a chain) and costs the volume of its per-dimension maximum. Give every
 * record a weight q_r >= 0 and let, for each shape c, val(c) be the heaviest chain of records
 * that fit in c. An object O whose per-dimension maximum is c holds a chain that fits in c, so
 * q(O) <= val(c) <= rho * vol(c) with rho = max over shapes of val(c) / vol(c). Summing over
 * the objects of any plan: sum q <= rho * total, so total >= sum q / rho. This holds for any
 * weights, under any may-share relation (a relation only removes objects), and is computed
 * exactly below in integers; the shapes are the combinations of the records' distinct widths,
 * heights and depths that are the maximum of the records fitting in them (every object's shape
 * is one).
 *
 * The best weights are the dual of the set-covering LP "cover every record by objects at least
 * once at least cost". It is solved by column generation: a revised simplex (dense basis
 * inverse, partial Dantzig pricing, right-hand side perturbed against cycling, refactorised
 * every TG__LP_REFACTOR pivots) over the objects generated so far, starting from one object
 * per record; then, per shape, the heaviest chain under duals smoothed towards the best so far
 * (Wentges; without it the tail of the column generation took 100x longer here), by weighted
 * interval scheduling, O(n) per shape; chains worth more than their shape's volume at the LP's
 * duals join the LP; done when the estimate meets the LP's value or nothing joins. The bound
 * is taken from the best duals seen, so stopping early (work limit) still gives a valid, if
 * weaker, bound. Floating point only steers the search: the bound itself comes from integer
 * weights and exact arithmetic.
 *
 * Deterministic (a work count, no randomness), unless a deadline is given (the LP dive). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/bounds/lp.h"
#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"

#define TG__LP_MAX_RECORDS 1024u   /* the basis inverse is n x n doubles */
#define TG__LP_MAX_SHAPES 16384u   /* shapes priced per round */
#define TG__LP_REFACTOR 256u       /* pivots between refactorisations */
#define TG__LP_ADD 48u             /* chains added per round, at most */
#define TG__LP_WORK 2000000000ull  /* default work (inner-loop steps), about a second */
#define TG__LP_TOL 1e-9            /* reduced-cost and pivot tolerances (costs scaled to <= 1) */
#define TG__LP_ADD_TOL 1e-7        /* a chain joins when it beats its shape by this much */
#define TG__LP_SMOOTH 0.8          /* dual smoothing towards the best duals so far */

typedef struct lp_col {
  size_t start; /* into members */
  uint32_t len;
  uint32_t shape;
  double cost; /* scaled */
} lp_col;

struct tg__lp {
  const tg_allocator *alloc;
  size_t n;
  /* records in order of last task, and the chain predecessor bound: pred[k] = number of
   * records (in that order) that end before record order[k] starts */
  uint32_t *order, *pred;
  /* shapes */
  size_t nshapes;
  tg_extent *shape;
  uint64_t *shape_vol;
  double *shape_cost;  /* scaled */
  uint32_t *rank;      /* per record: rank of w, h, d in the distinct values (3 per record) */
  uint32_t *shape_rank;/* per shape: 3 ranks */
  /* LP */
  lp_col *cols;
  size_t ncols, capcols;
  uint32_t *members;
  size_t nmem, capmem;
  double *binv; /* column-major n x n: binv[k * n + i] = row i, column k */
  double *bmat; /* refactorisation scratch, 2 n x n */
  double *x, *pi, *alpha, *rhs, *best_pi, *dp, *cb;
  uint32_t *basis;     /* per row: column id; id < n is row id's surplus column */
  unsigned char *in_basis; /* per column id (n + ncols) */
  size_t capbasis;
  size_t price_at; /* partial pricing: where the next search starts */
  uint64_t *q;         /* integer weights of the exact bound */
  double scale;        /* the largest shape volume: costs are volumes over it */
  double best_est;     /* the best floating estimate of the bound so far (scaled), or -1 */
  double smooth;       /* dual smoothing now */
  uint64_t work, max_work, deadline_us;
};
typedef struct tg__lp lp_work;

static void *lp_grow(lp_work *w, void *p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return p;
  size_t cap2 = *cap ? *cap : 64;
  while (cap2 < need) cap2 *= 2;
  size_t oldb, newb;
  if (!tg__mul_size(*cap, size, &oldb) || !tg__mul_size(cap2, size, &newb)) return NULL;
  void *q = tg__realloc(w->alloc, p, oldb, newb);
  if (q != NULL) *cap = cap2;
  return q;
}

/* Out of work, or past the deadline (one clock read per pivot or round: each costs far
 * more). */
static int lp_stop(lp_work *w) {
  if (w->work >= w->max_work) return 1;
  if (w->deadline_us != 0 && tg__now_us() >= w->deadline_us) {
    w->max_work = 0; /* stays stopped */
    return 1;
  }
  return 0;
}

/* Column `id`'s entries (surplus columns: -1 at their row). */
static double lp_col_cost(const lp_work *w, size_t id) { return id < w->n ? 0.0 : w->cols[id - w->n].cost; }

/* alpha = B^-1 A_id */
static void lp_ftran(lp_work *w, size_t id) {
  size_t n = w->n;
  if (id < n) {
    const double *c = w->binv + id * n;
    for (size_t i = 0; i < n; ++i) w->alpha[i] = -c[i];
  } else {
    const lp_col *col = &w->cols[id - n];
    memset(w->alpha, 0, n * sizeof *w->alpha);
    for (uint32_t m = 0; m < col->len; ++m) {
      const double *c = w->binv + (size_t)w->members[col->start + m] * n;
      for (size_t i = 0; i < n; ++i) w->alpha[i] += c[i];
    }
    w->work += (uint64_t)n * col->len;
  }
}

/* B^-1 from the basis by Gauss-Jordan with partial pivoting; then x and pi. 0 when singular. */
static int lp_refactor(lp_work *w) {
  size_t n = w->n;
  double *a = w->bmat, *inv = w->bmat + n * n; /* row-major scratch */
  memset(a, 0, n * n * sizeof *a);
  memset(inv, 0, n * n * sizeof *inv);
  for (size_t i = 0; i < n; ++i) {
    inv[i * n + i] = 1.0;
    size_t id = w->basis[i];
    if (id < n) {
      a[id * n + i] = -1.0;
    } else {
      const lp_col *col = &w->cols[id - n];
      for (uint32_t m = 0; m < col->len; ++m) a[(size_t)w->members[col->start + m] * n + i] = 1.0;
    }
  }
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
    if (fabs(a[p * n + c]) < 1e-11) return 0;
    if (p != c) {
      for (size_t k = 0; k < n; ++k) {
        double t = a[p * n + k];
        a[p * n + k] = a[c * n + k];
        a[c * n + k] = t;
        t = inv[p * n + k];
        inv[p * n + k] = inv[c * n + k];
        inv[c * n + k] = t;
      }
    }
    /* columns before c of `a` are eliminated already */
    double d = 1.0 / a[c * n + c];
    for (size_t k = c; k < n; ++k) a[c * n + k] *= d;
    for (size_t k = 0; k < n; ++k) inv[c * n + k] *= d;
    for (size_t r = 0; r < n; ++r) {
      double f = a[r * n + c];
      if (r == c || f == 0.0) continue;
      for (size_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      for (size_t k = 0; k < n; ++k) inv[r * n + k] -= f * inv[c * n + k];
    }
  }
  w->work += (uint64_t)n * n * n * 3 / 2;
  /* inv is B^-1 row-major (rows of B^-1 = basis rows, columns = record rows) */
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < n; ++k) w->binv[k * n + i] = inv[i * n + k];
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (size_t k = 0; k < n; ++k) s += inv[i * n + k] * w->rhs[k];
    w->x[i] = s;
    w->cb[i] = lp_col_cost(w, w->basis[i]);
  }
  for (size_t k = 0; k < n; ++k) {
    const double *c = w->binv + k * n;
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += w->cb[i] * c[i];
    w->pi[k] = s;
  }
  return 1;
}

/* Primal simplex over the columns so far, from the current (feasible) basis. 1 when optimal,
 * 0 when stopped (work, or numerical trouble). */
static int lp_simplex(lp_work *w) {
  size_t n = w->n;
  for (unsigned since = 0;; ++since) {
    if (lp_stop(w)) return 0;
    if (since >= TG__LP_REFACTOR) {
      if (!lp_refactor(w)) return 0;
      since = 0;
    }
    /* entering column: the most negative reduced cost within a window of columns, windows
     * in turn from where the last search stopped (partial pricing); optimal when a whole
     * turn finds none */
    size_t enter = SIZE_MAX, total = n + w->ncols;
    size_t window = total / 8 > 512 ? total / 8 : 512;
    double best = -TG__LP_TOL;
    for (size_t seen = 0; seen < total && enter == SIZE_MAX;) {
      size_t end = seen + window < total ? seen + window : total;
      for (; seen < end; ++seen) {
        size_t id = w->price_at++;
        if (w->price_at >= total) w->price_at = 0;
        if (w->in_basis[id]) continue;
        double d;
        if (id < n) {
          d = w->pi[id];
        } else {
          const lp_col *col = &w->cols[id - n];
          d = col->cost;
          for (uint32_t m = 0; m < col->len; ++m) d -= w->pi[w->members[col->start + m]];
          w->work += col->len;
        }
        if (d < best) {
          best = d;
          enter = id;
        }
      }
    }
    w->work += n;
    if (enter == SIZE_MAX) return 1;
    lp_ftran(w, enter);
    size_t r = SIZE_MAX;
    double theta = 0;
    for (size_t i = 0; i < n; ++i) {
      double a = w->alpha[i];
      if (a <= TG__LP_TOL) continue;
      double t = w->x[i] / a;
      if (r == SIZE_MAX || t < theta - 1e-12 || (t <= theta + 1e-12 && a > w->alpha[r])) {
        r = i;
        theta = t;
      }
    }
    if (r == SIZE_MAX) return 0; /* unbounded: cannot happen with costs >= 0 */
    double ar = w->alpha[r];
    /* pi += (d / alpha_r) * row r of B^-1 */
    double f = best / ar;
    for (size_t k = 0; k < n; ++k) w->pi[k] += f * w->binv[k * n + r];
    for (size_t i = 0; i < n; ++i) w->x[i] -= theta * w->alpha[i];
    w->x[r] = theta;
    for (size_t k = 0; k < n; ++k) {
      double *c = w->binv + k * n;
      double t = c[r] / ar;
      if (t != 0.0)
        for (size_t i = 0; i < n; ++i) c[i] -= w->alpha[i] * t;
      c[r] = t;
    }
    w->work += (uint64_t)n * n;
    w->in_basis[w->basis[r]] = 0;
    w->in_basis[enter] = 1;
    w->basis[r] = (uint32_t)enter;
  }
}

/* Heaviest chain of records fitting shape s under weights q; dp[0..n]. One definition for
 * both weight types: lp_chain in doubles, lp_chain_int in exact integers. */
#define LP_CHAIN(name, T)                                                                  \
  static T name(const lp_work *w, size_t s, const T *q, T *dp) {                          \
    const uint32_t *sr = w->shape_rank + 3 * s;                                            \
    dp[0] = 0;                                                                             \
    for (size_t k = 0; k < w->n; ++k) {                                                    \
      uint32_t r = w->order[k];                                                            \
      const uint32_t *rr = w->rank + 3 * (size_t)r;                                        \
      T v = dp[k];                                                                         \
      if (q[r] > 0 && rr[0] <= sr[0] && rr[1] <= sr[1] && rr[2] <= sr[2]) {               \
        T t = dp[w->pred[k]] + q[r];                                                       \
        if (t > v) v = t;                                                                  \
      }                                                                                    \
      dp[k + 1] = v;                                                                       \
    }                                                                                      \
    return dp[w->n];                                                                       \
  }
LP_CHAIN(lp_chain, double)
LP_CHAIN(lp_chain_int, uint64_t)
#undef LP_CHAIN

/* ceil(a * b / c), c > 0, or UINT64_MAX when it does not fit. */
static uint64_t mul_div_ceil(uint64_t a, uint64_t b, uint64_t c) {
#ifdef __SIZEOF_INT128__
  __extension__ typedef unsigned __int128 u128;
  u128 p = (u128)a * b;
  u128 q = p / c + (p % c != 0);
  return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
#else
  long double q = (long double)a * (long double)b / (long double)c;
  if (q >= 18446744073709551615.0L) return UINT64_MAX;
  /* rounding: step down by a relative 1e-15 to stay below the exact quotient */
  q = q * (1.0L - 1e-15L);
  return (uint64_t)q;
#endif
}

/* The exact bound from weights pi (scaled doubles): integer weights q = floor(pi * K). */
static uint64_t lp_exact_bound(lp_work *w, const double *pi, uint64_t *q, uint64_t *dpi) {
  double sum = 0;
  for (size_t r = 0; r < w->n; ++r)
    if (pi[r] > 0) sum += pi[r];
  if (!(sum > 0)) return 0;
  double k = ldexp(1.0, 50) / sum;
  uint64_t total = 0;
  for (size_t r = 0; r < w->n; ++r) {
    q[r] = pi[r] > 0 ? (uint64_t)floor(pi[r] * k) : 0;
    total += q[r];
  }
  uint64_t bound = UINT64_MAX;
  for (size_t s = 0; s < w->nshapes; ++s) {
    uint64_t v = lp_chain_int(w, s, q, dpi);
    if (v == 0) continue;
    uint64_t b = mul_div_ceil(total, w->shape_vol[s], v);
    if (b < bound) bound = b;
  }
  w->work += (uint64_t)w->nshapes * w->n;
  return bound == UINT64_MAX ? 0 : bound;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted distinct values of one dimension into vals; returns their number. */
static size_t distinct(const tg_usage_record *rec, size_t n, int dim, uint64_t *vals) {
  for (size_t r = 0; r < n; ++r) vals[r] = dim == 0 ? rec[r].size.w : dim == 1 ? rec[r].size.h : rec[r].size.d;
  qsort(vals, n, sizeof *vals, cmp_u64);
  size_t m = 0;
  for (size_t r = 0; r < n; ++r)
    if (m == 0 || vals[m - 1] != vals[r]) vals[m++] = vals[r];
  return m;
}

static uint32_t rank_of(const uint64_t *vals, size_t m, uint64_t v) {
  size_t lo = 0, hi = m;
  while (lo + 1 < hi) {
    size_t mid = (lo + hi) / 2;
    if (vals[mid] <= v) lo = mid; else hi = mid;
  }
  return (uint32_t)lo;
}


/* Shapes: combinations of distinct values that are the per-dimension maximum of the records
 * fitting in them. 0 on allocation failure; nshapes = 0 when there are too many. */
static int lp_shapes(lp_work *w, const tg_usage_record *rec) {
  size_t n = w->n;
  uint64_t *v[3];
  size_t m[3];
  int ok = 1;
  for (int d = 0; d < 3; ++d) {
    v[d] = tg__obj_alloc(w->alloc, n, sizeof(uint64_t));
    ok = ok && v[d] != NULL;
  }
  w->rank = tg__obj_alloc(w->alloc, 3 * n, sizeof *w->rank);
  if (!ok || w->rank == NULL) goto fail;
  for (int d = 0; d < 3; ++d) m[d] = distinct(rec, n, d, v[d]);
  for (size_t r = 0; r < n; ++r) {
    w->rank[3 * r] = rank_of(v[0], m[0], rec[r].size.w);
    w->rank[3 * r + 1] = rank_of(v[1], m[1], rec[r].size.h);
    w->rank[3 * r + 2] = rank_of(v[2], m[2], rec[r].size.d);
  }
  w->nshapes = 0;
  if (m[0] * m[1] > TG__LP_MAX_SHAPES || m[0] * m[1] * m[2] > (size_t)TG__LP_MAX_SHAPES * 8) goto done;
  size_t all = m[0] * m[1] * m[2];
  w->shape = tg__obj_alloc(w->alloc, all, sizeof *w->shape);
  w->shape_vol = tg__obj_alloc(w->alloc, all, sizeof *w->shape_vol);
  w->shape_cost = tg__obj_alloc(w->alloc, all, sizeof *w->shape_cost);
  w->shape_rank = tg__obj_alloc(w->alloc, 3 * all, sizeof *w->shape_rank);
  if (w->shape == NULL || w->shape_vol == NULL || w->shape_cost == NULL || w->shape_rank == NULL) goto fail;
  for (size_t a = 0; a < m[0]; ++a)
    for (size_t b = 0; b < m[1]; ++b)
      for (size_t c = 0; c < m[2]; ++c) {
        tg_extent mx = {0, 0, 0};
        for (size_t r = 0; r < n; ++r) {
          const uint32_t *rr = w->rank + 3 * r;
          if (rr[0] <= a && rr[1] <= b && rr[2] <= c) mx = tg__extent_max(mx, rec[r].size);
        }
        w->work += n;
        if (mx.w != v[0][a] || mx.h != v[1][b] || mx.d != v[2][c]) continue;
        if (w->nshapes >= TG__LP_MAX_SHAPES) {
          w->nshapes = 0;
          goto done;
        }
        size_t s = w->nshapes++;
        w->shape[s] = mx;
        w->shape_vol[s] = tg__extent_volume_sat(mx);
        w->shape_rank[3 * s] = (uint32_t)a;
        w->shape_rank[3 * s + 1] = (uint32_t)b;
        w->shape_rank[3 * s + 2] = (uint32_t)c;
      }
done:
  for (int d = 0; d < 3; ++d) tg__free(w->alloc, v[d]);
  return 1;
fail:
  for (int d = 0; d < 3; ++d) tg__free(w->alloc, v[d]);
  return 0;
}

/* Add a chain (members taken from dp by backtracking) of shape s as a column. 0 on failure. */
static int lp_add_chain(lp_work *w, size_t s, const double *q, double *dp) {
  (void)lp_chain(w, s, q, dp);
  size_t len = 0;
  lp_col *cols = lp_grow(w, w->cols, &w->capcols, w->ncols + 1, sizeof *w->cols);
  if (cols == NULL) return 0;
  w->cols = cols;
  if (w->n + w->ncols + 1 > w->capbasis) {
    size_t cap = w->capbasis;
    unsigned char *ib = lp_grow(w, w->in_basis, &cap, w->n + w->ncols + 1, 1);
    if (ib == NULL) return 0;
    memset(ib + w->capbasis, 0, cap - w->capbasis);
    w->in_basis = ib;
    w->capbasis = cap;
  }
  size_t start = w->nmem;
  for (size_t k = w->n; k > 0;) {
    if (dp[k] != dp[k - 1]) {
      uint32_t *mem = lp_grow(w, w->members, &w->capmem, w->nmem + 1, sizeof *w->members);
      if (mem == NULL) return 0;
      w->members = mem;
      w->members[w->nmem++] = w->order[k - 1];
      ++len;
      k = w->pred[k - 1];
    } else {
      --k;
    }
  }
  w->cols[w->ncols++] = (lp_col){start, (uint32_t)len, (uint32_t)s, w->shape_cost[s]};
  return 1;
}

/* One pricing pass at weights y: returns the floating estimate of the bound at y,
 * sum(y+) / max over shapes of chain(y) / cost, and puts into picks[0..*npicks) the shapes
 * whose heaviest chain at y is worth more than its cost at the LP's duals too (the columns
 * that improve the LP), largest gain at y first, at most TG__LP_ADD. */
static double lp_price(lp_work *w, const double *y, uint32_t *picks, size_t *npicks) {
  size_t n = w->n;
  double rho = 0, sum = 0;
  double gain_at[TG__LP_ADD];
  *npicks = 0;
  for (size_t r = 0; r < n; ++r)
    if (y[r] > 0) sum += y[r];
  for (size_t s = 0; s < w->nshapes; ++s) {
    double v = lp_chain(w, s, y, w->dp);
    double ratio = v / w->shape_cost[s];
    if (ratio > rho) rho = ratio;
    double gain = v - w->shape_cost[s];
    if (gain <= TG__LP_ADD_TOL) continue;
    /* the chain's worth at the LP's duals */
    double at_pi = 0;
    for (size_t k = n; k > 0;) {
      if (w->dp[k] != w->dp[k - 1]) {
        at_pi += w->pi[w->order[k - 1]];
        k = w->pred[k - 1];
      } else {
        --k;
      }
    }
    if (at_pi - w->shape_cost[s] <= TG__LP_ADD_TOL) continue;
    size_t at = *npicks < TG__LP_ADD ? (*npicks)++ : TG__LP_ADD;
    while (at > 0 && gain_at[at - 1] < gain) {
      if (at < TG__LP_ADD) {
        picks[at] = picks[at - 1];
        gain_at[at] = gain_at[at - 1];
      }
      --at;
    }
    if (at < TG__LP_ADD) {
      picks[at] = (uint32_t)s;
      gain_at[at] = gain;
    }
  }
  w->work += (uint64_t)w->nshapes * n * 2;
  return rho > 0 ? sum / rho : 0.0;
}

/* The work record set-up: shapes, order, predecessors, one column per record, the basis. */
static tg_status lp_setup(lp_work *w, const tg_usage_record *records) {
  size_t n = w->n;
  if (!lp_shapes(w, records)) return TG_ERROR_OUT_OF_HOST_MEMORY;
  if (w->nshapes == 0) return TG_OK;
  w->order = tg__obj_alloc(w->alloc, n, sizeof *w->order);
  w->pred = tg__obj_alloc(w->alloc, n, sizeof *w->pred);
  w->binv = tg__obj_alloc(w->alloc, n * n, sizeof *w->binv);
  w->bmat = tg__obj_alloc(w->alloc, 2 * n * n, sizeof *w->bmat);
  double **vecs[] = {&w->x, &w->pi, &w->alpha, &w->rhs, &w->best_pi, &w->cb};
  for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; ++i) *vecs[i] = tg__calloc(w->alloc, n, sizeof(double));
  w->dp = tg__obj_alloc(w->alloc, n + 1, sizeof(uint64_t) > sizeof(double) ? sizeof(uint64_t) : sizeof(double));
  w->q = tg__obj_alloc(w->alloc, n, sizeof *w->q);
  w->basis = tg__obj_alloc(w->alloc, n, sizeof *w->basis);
  w->capbasis = 2 * n + 64;
  w->in_basis = tg__calloc(w->alloc, w->capbasis, 1);
  tg__sort_item *items = tg__obj_alloc(w->alloc, 2 * n, sizeof *items);
  if (w->order == NULL || w->pred == NULL || w->binv == NULL || w->bmat == NULL || w->x == NULL ||
      w->pi == NULL || w->alpha == NULL || w->rhs == NULL || w->best_pi == NULL || w->cb == NULL ||
      w->dp == NULL || w->q == NULL || w->basis == NULL || w->in_basis == NULL || items == NULL) {
    tg__free(w->alloc, items);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  /* records by last task (stable), and chain predecessors */
  for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){records[r].last_task, r};
  tg__sort_items_stable(items, n, items + n);
  for (size_t k = 0; k < n; ++k) w->order[k] = (uint32_t)items[k].idx;
  tg__free(w->alloc, items);
  for (size_t k = 0; k < n; ++k) {
    uint32_t f = records[w->order[k]].first_task;
    size_t lo = 0, hi = n; /* first position whose last task >= f */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (records[w->order[mid]].last_task < f) lo = mid + 1; else hi = mid;
    }
    w->pred[k] = (uint32_t)lo;
  }
  /* costs scaled to at most 1 */
  uint64_t mx = 1;
  for (size_t s = 0; s < w->nshapes; ++s)
    if (w->shape_vol[s] > mx) mx = w->shape_vol[s];
  w->scale = (double)mx;
  for (size_t s = 0; s < w->nshapes; ++s) w->shape_cost[s] = (double)w->shape_vol[s] / w->scale;
  /* start: one object per record, of the record's own shape (a shape: it is the maximum of
   * what fits in it); right-hand side perturbed below 1e-7 */
  for (size_t r = 0; r < n; ++r) {
    w->rhs[r] = 1.0 + 1e-7 * (double)((r * 2654435761u) % 1000u) / 1000.0;
    size_t pick = SIZE_MAX;
    for (size_t s = 0; s < w->nshapes; ++s)
      if (tg__extent_equal(w->shape[s], records[r].size)) pick = s;
    if (pick == SIZE_MAX) return TG_ERROR_INTERNAL;
    lp_col *cols = lp_grow(w, w->cols, &w->capcols, w->ncols + 1, sizeof *w->cols);
    if (cols == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    w->cols = cols;
    uint32_t *mem = lp_grow(w, w->members, &w->capmem, w->nmem + 1, sizeof *w->members);
    if (mem == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    w->members = mem;
    w->members[w->nmem] = (uint32_t)r;
    w->cols[w->ncols++] = (lp_col){w->nmem++, 1, (uint32_t)pick, w->shape_cost[pick]};
    w->basis[r] = (uint32_t)(n + r);
    w->in_basis[n + r] = 1;
  }
  w->best_est = -1;
  w->smooth = TG__LP_SMOOTH;
  return TG_OK;
}

/* Column generation until the LP's optimum, the target (scaled) or the work or deadline.
 * *optimal = 1 when the LP's optimum was reached. */
static tg_status lp_run(lp_work *w, uint64_t target, int *optimal) {
  size_t n = w->n;
  *optimal = 0;
  if (!lp_refactor(w)) return TG_OK;
  double *dp = w->dp, *y = w->alpha; /* alpha is free between simplex runs */
  uint32_t picks[TG__LP_ADD];
  size_t npicks = 0;
  int lp_optimal = 0;
  double target_scaled = target ? (double)target / w->scale : HUGE_VAL;
  for (;;) {
    if (!lp_optimal) {
      lp_optimal = lp_simplex(w);
      if (!lp_optimal) return TG_OK;
    }
    /* price at the smoothed duals y, between the best duals so far and the LP's */
    double a = w->best_est > 0 ? w->smooth : 0.0;
    for (size_t r = 0; r < n; ++r) y[r] = a > 0 ? a * w->best_pi[r] + (1.0 - a) * w->pi[r] : w->pi[r];
    double est = lp_price(w, y, picks, &npicks);
    if (est > w->best_est) {
      w->best_est = est;
      memcpy(w->best_pi, y, n * sizeof *y);
    }
    double z = 0; /* the LP's value: its duals are optimal for the unperturbed LP too */
    for (size_t r = 0; r < n; ++r) z += w->pi[r];
    if (w->best_est >= z * (1.0 - 1e-9) - 1e-12) {
      *optimal = 1;
      return TG_OK;
    }
    if (w->best_est >= target_scaled * (1.0 - 1e-10) || lp_stop(w)) return TG_OK;
    if (npicks == 0) {
      if (a == 0.0) { /* nothing prices out at the LP's own duals */
        *optimal = 1;
        return TG_OK;
      }
      w->smooth *= 0.5; /* mis-priced: move towards the LP's duals */
      if (w->smooth < 0.05) w->smooth = 0.0;
      continue;
    }
    for (size_t i = 0; i < npicks; ++i)
      if (!lp_add_chain(w, picks[i], y, dp)) return TG_ERROR_OUT_OF_HOST_MEMORY;
    lp_optimal = 0;
  }
}

tg_status tg__lp_create(const tg_usage_record *records, size_t count, uint64_t max_work,
                        uint64_t deadline_us, const tg_allocator *alloc, tg__lp **out) {
  *out = NULL;
  if (count < 2 || count > TG__LP_MAX_RECORDS) return TG_OK;
  alloc = tg__alloc_or_default(alloc);
  lp_work *w = tg__calloc(alloc, 1, sizeof *w);
  if (w == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  w->alloc = alloc;
  w->n = count;
  w->max_work = max_work ? max_work : TG__LP_WORK;
  w->deadline_us = deadline_us;
  tg_status st = lp_setup(w, records);
  if (st != TG_OK || w->nshapes == 0) {
    tg__lp_destroy(w);
    return st;
  }
  *out = w;
  return TG_OK;
}

tg_status tg__lp_solve(tg__lp *lp, uint64_t target, int *optimal) { return lp_run(lp, target, optimal); }

uint64_t tg__lp_bound(tg__lp *lp) {
  return lp->best_est > 0 ? lp_exact_bound(lp, lp->best_pi, lp->q, (uint64_t *)(void *)lp->dp) : 0;
}

size_t tg__lp_solution(const tg__lp *lp, tg__lp_column *cols) {
  size_t k = 0, n = lp->n;
  for (size_t i = 0; i < n; ++i) {
    size_t id = lp->basis[i];
    if (id < n || lp->x[i] < 1e-6) continue;
    const lp_col *c = &lp->cols[id - n];
    cols[k++] = (tg__lp_column){lp->x[i], lp->members + c->start, c->len, lp->shape_vol[c->shape]};
  }
  return k;
}

uint64_t tg__lp_work_done(const tg__lp *lp) { return lp != NULL ? lp->work : 0; }

void tg__lp_destroy(tg__lp *lp) {
  if (lp == NULL) return;
  const tg_allocator *a = lp->alloc;
  void *blocks[] = {lp->order, lp->pred, lp->shape, lp->shape_vol, lp->shape_cost, lp->rank,
                    lp->shape_rank, lp->cols, lp->members, lp->binv, lp->bmat, lp->x, lp->pi,
                    lp->alpha, lp->rhs, lp->best_pi, lp->dp, lp->cb, lp->q, lp->basis, lp->in_basis};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; ++i) tg__free(a, blocks[i]);
  tg__free(a, lp);
}

tg_status tg_bounds_objects_lp(const tg_usage_record *records, size_t count, uint32_t dims,
                               uint64_t target, uint64_t max_work, const tg_allocator *alloc,
                               uint64_t *out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = 0;
  tg_bounds b;
  tg_status st = tg_bounds_compute(records, count, dims, alloc, &b);
  if (st != TG_OK) return st;
  tg__lp *lp = NULL;
  int optimal = 0;
  st = tg__lp_create(records, count, max_work, 0, alloc, &lp);
  if (st == TG_OK && lp != NULL) st = tg__lp_solve(lp, target, &optimal);
  if (st != TG_OK) {
    tg__lp_destroy(lp);
    return st;
  }
  uint64_t lb = lp ? tg__lp_bound(lp) : 0;
  tg__lp_destroy(lp);
  *out = lb > b.positional_max ? lb : b.positional_max;
  return TG_OK;
}
