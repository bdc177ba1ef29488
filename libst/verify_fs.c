/*
 * verify_fs.c - the paths st_verify reads: joining, the validator a name
 * calls for, link resolution that never leaves the folder being
 * verified, sorted folder listings and small files read whole. It knows
 * no cache layout (verify_hf.c) and reads no weights (verify_jobs.c).
 *
 * Links are resolved here, component by component, with lstat and
 * readlink: an absolute link, or one whose ".." climbs above the folder
 * being verified, is reported and never followed; the resolved path is
 * then opened (verify_jobs.c) with O_NOFOLLOW | O_NONBLOCK and checked to
 * be a regular file, so neither a link swapped in nor a FIFO can be opened
 * by mistake.
 */
#include "verify_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- paths ------------------------------------------------------------------ */

/* a + "/" + b, or the one that is not empty. */
char *st__verify_join(const char *a, const char *b)
{
	if (!*a)
		return strdup(b);
	if (!*b)
		return strdup(a);
	size_t n = strlen(a);
	return st__verify_fmt("%s%s%s", a, a[n - 1] == '/' ? "" : "/", b);
}

/* How a weight file is checked, from its name. */
int st__verify_validator(const char *name)
{
	if (st__ends_with(name, ".safetensors"))
		return V_SAFETENSORS;
	/*
	 * PyTorch weights: pytorch_model*.bin, adapter_model.bin and the like.
	 * Other pickles in a repository (training_args.bin, optimizer.pt,
	 * rng_state.pth) hold no state dict and are only hashed.
	 */
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	if (st__ends_with(base, ".bin") && strstr(base, "model"))
		return V_TORCH;
	if (st__ends_with(name, ".gguf"))
		return V_GGUF;
	return V_NONE;
}

/*
 * Resolve rel (relative to root, which is not itself resolved) to a path
 * relative to root with no links in it, following links only while they
 * stay below root. *out is malloc'd on RES_OK; *link (malloc'd, if not NULL)
 * receives the target text of the link that failed.
 */
int st__verify_resolve(const char *root, const char *rel, char **out, char **link)
{
	char *rest = strdup(rel), *cur = calloc(1, strlen(rel) + 2);
	size_t cur_len = 0, cur_cap = strlen(rel) + 2;
	int links = 0, rc = RES_OK;
	*out = NULL;
	if (link)
		*link = NULL;
	if (!rest || !cur) {
		rc = RES_IO;
		goto done;
	}
	while (*rest) {
		/* Take the next component of rest. */
		char *slash = strchr(rest, '/');
		size_t clen = slash ? (size_t)(slash - rest) : strlen(rest);
		char *comp = strndup(rest, clen);
		memmove(rest, rest + clen + (slash ? 1 : 0),
		        strlen(rest + clen + (slash ? 1 : 0)) + 1);
		if (!comp) {
			rc = RES_IO;
			goto done;
		}
		if (!*comp || !strcmp(comp, ".")) {
			free(comp);
			continue;
		}
		if (!strcmp(comp, "..")) {
			free(comp);
			if (cur_len == 0) {
				rc = RES_ESCAPES;
				goto done;
			}
			char *s = strrchr(cur, '/');
			cur_len = s ? (size_t)(s - cur) : 0;
			cur[cur_len] = '\0';
			continue;
		}
		size_t need = cur_len + 1 + clen + 1;
		if (need > cur_cap) {
			char *nc = realloc(cur, need * 2);
			if (!nc) {
				free(comp);
				rc = RES_IO;
				goto done;
			}
			cur = nc;
			cur_cap = need * 2;
		}
		size_t before = cur_len;
		if (cur_len)
			cur[cur_len++] = '/';
		memcpy(cur + cur_len, comp, clen + 1);
		cur_len += clen;
		free(comp);
		char *full = st__verify_join(root, cur);
		struct stat sb;
		if (!full) {
			rc = RES_IO;
			goto done;
		}
		if (lstat(full, &sb) < 0) {
			rc = errno == ENOENT || errno == ENOTDIR ? RES_DANGLING : RES_IO;
			free(full);
			goto done;
		}
		if (S_ISLNK(sb.st_mode)) {
			char target[4096];
			ssize_t k = readlink(full, target, sizeof target - 1);
			free(full);
			if (k < 0) {
				rc = RES_IO;
				goto done;
			}
			target[k] = '\0';
			if (++links > MAX_LINKS) {
				rc = RES_LOOP;
				goto done;
			}
			if (target[0] == '/') {
				rc = RES_ABSOLUTE;
				if (link)
					*link = strdup(target);
				goto done;
			}
			/* The link's target replaces it, relative to its folder. */
			cur_len = before;
			cur[cur_len] = '\0';
			char *nr = *rest ? st__verify_fmt("%s/%s", target, rest) : strdup(target);
			if (!nr) {
				rc = RES_IO;
				goto done;
			}
			free(rest);
			rest = nr;
			continue;
		}
		free(full);
		if (*rest && !S_ISDIR(sb.st_mode)) {
			rc = RES_DANGLING;
			goto done;
		}
	}
	*out = cur;
	cur = NULL;
done:
	free(rest);
	free(cur);
	return rc;
}

/* Sorted names in a folder (without . and ..); NULL-terminated. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **st__verify_list_dir(st_verify *v, const char *path, size_t *n_out)
{
	*n_out = 0;
	DIR *d = opendir(path);
	if (!d) {
		/* A folder that is not there holds nothing; one not readable is unchecked. */
		int e = errno;
		if (v && e != ENOENT)
			st__verify_problem(v, ST_VERIFY_UNREADABLE, path, "cannot list the "
			                   "folder: %s; nothing in it is verified",
			                   strerror(e));
		errno = e;
		return NULL;
	}
	size_t n = 0, cap = 16;
	char **names = malloc(cap * sizeof *names);
	struct dirent *de;
	while (names && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n + 1 >= cap) {
			char **nn = realloc(names, 2 * cap * sizeof *nn);
			if (!nn)
				break;
			names = nn;
			cap *= 2;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (!names)
		return NULL;
	names[n] = NULL;
	if (n)
		qsort(names, n, sizeof *names, cmp_str);
	*n_out = n;
	return names;
}

void st__verify_free_names(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

/* Read a small file whole (NUL-terminated); NULL with errno on failure. */
char *st__verify_read_small(const char *path, size_t *len, int *read_failed)
{
	*read_failed = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > MAX_SMALL_FILE) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	size_t n = (size_t)sb.st_size, got = 0;
	char *buf = malloc(n + 1);
	while (buf && got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) { /* an I/O error: no text, not the part read */
			int e = errno;
			free(buf);
			close(fd);
			*read_failed = 1;
			errno = e;
			return NULL;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[got] = '\0';
	*len = got;
	return buf;
}
