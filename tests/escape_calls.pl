# escape_calls.pl - the check behind tests/escape_calls.sh (see there):
# every output call of the tools (printf, fprintf, dprintf, vprintf,
# vfprintf, fputs, puts, putchar, fputc, putc, fwrite, perror) prints only
# what cannot carry a string from a file unescaped. Plain Perl 5, no
# modules (perl-base, which every Debian system has).
#
#   perl tests/escape_calls.pl ALLOW_FILE FILE.c...
#
# An argument printed as text (a %s or %c conversion, the string of fputs
# or puts, the character of putc, the buffer of fwrite) is safe when it is
#   - a string or character literal, a number, or a ternary of safe ones;
#   - the result of an escaper (cli_printable) or of a function that
#     returns text of its own (every return of a function of the file
#     given is safe, or a libst name table in @FIXED below);
#   - a local variable every assignment of which is safe, or a local char
#     array written only by snprintf with safe arguments or by the number
#     formatters (cli_fmt_bytes, cli_fmt_count, cli_fmt_shape);
#   - a parameter of its function that every call of the function, in any
#     of the files given, passes safe.
# Anything else (a member of a struct libst filled from the file, a
# message, a name, a buffer built elsewhere) is a finding, unless the
# function and argument are in ALLOW_FILE ("FILE FUNCTION ARGUMENT  why").
# Prints one line per finding, "FILE:LINE: FUNCTION: CALL: ARGUMENT", and
# exits 1 when there is any (or when an allow-list entry matches nothing:
# a stale entry would hide the next bypass).
use strict;
use warnings;

my @OUT = qw(printf fprintf dprintf vprintf vfprintf fputs puts putchar fputc putc fwrite perror);
my %OUT = map { $_ => 1 } @OUT;
# Text libst or the C library chose, never a file: names of enum values,
# error strings, the version.
# st_diff_label: a dtype's name or "MXFP4"; st_diagnose_*: libst's words
# about a comparison, with numbers and dtype names in them;
# gguf_type_label (tools/common/gguf_info.c): st_ggml_type_name's name or
# "type N (unknown)" with N a number.
my %FIXED = map { $_ => 1 } qw(
	st_dtype_name st_strerror strerror st_verify_kind_name st_gguf_type_name
	st_version_string st_ggml_type_name st_file_format_name st_diff_label
	st_diagnose_describe st_diagnose_dtype_line gguf_type_label
);
# Members that hold a hex digest libst computed (st_verify_file.sha256).
my %HEX_MEMBER = map { $_ => 1 } qw(sha256);
# Calls that only read a buffer given first.
my %READS = map { $_ => 1 } (@OUT, qw(strlen strcmp strncmp strchr strrchr strstr
	strtod strtol strtoul strtoull strdup cli_printable cli_xstrdup sizeof free
	cli_json_string cli_print_name));
# Functions whose every call must pass safe text at these argument
# positions: what they keep is printed later (table_print prints the cells
# table_add was given).
my %SINK = (table_add => [1], cli_progress_start => [1]);
# Calls that return a pointer into their first argument.
# (Or a copy of it; cli_ascii_fallback rewrites only its own symbols.)
my %INTO = map { $_ => 1 } qw(strchr strrchr strstr strpbrk strdup cli_xstrdup
	cli_ascii_fallback);
my %ESCAPE = map { $_ => 1 } qw(cli_printable);
# Calls that write only numbers or libst's own words into the buffer at
# this argument position (st_quant_*_describe: a layout, a plan).
my %FILLER = (cli_fmt_bytes => 0, cli_fmt_count => 0, cli_fmt_shape => 0,
              st_quant_layout_describe => 1, st_quant_plan_describe => 1,
              st_diagnose_describe => 1, st_diagnose_dtype_line => 2);

my $allow_file = shift @ARGV;
my %allow;
open my $af, '<', $allow_file or die "$allow_file: $!\n";
while (<$af>) {
	next if /^\s*(#|$)/;
	my ($file, $fn, $arg) = /^(\S+)\s+(\S+)\s+(\S+)/ or die "$allow_file:$.: not 'FILE FUNCTION ARGUMENT why'\n";
	$allow{"$file $fn $arg"} = 0;
}
close $af;

# ---- reading C --------------------------------------------------------------

# The text with comments blanked (newlines kept), strings kept.
sub strip_comments {
	my ($s) = @_;
	my $o = '';
	my $n = length $s;
	for (my $i = 0; $i < $n;) {
		my $c = substr($s, $i, 1);
		my $two = substr($s, $i, 2);
		if ($two eq '/*') {
			my $e = index($s, '*/', $i + 2);
			$e = $n - 2 if $e < 0;
			(my $blank = substr($s, $i, $e + 2 - $i)) =~ s/[^\n]/ /g;
			$o .= $blank;
			$i = $e + 2;
		} elsif ($two eq '//') {
			my $e = index($s, "\n", $i);
			$e = $n if $e < 0;
			$o .= ' ' x ($e - $i);
			$i = $e;
		} elsif ($c eq '"' || $c eq "'") {
			my $j = $i + 1;
			while ($j < $n && substr($s, $j, 1) ne $c) {
				$j++ if substr($s, $j, 1) eq '\\';
				$j++;
			}
			$o .= substr($s, $i, $j + 1 - $i);
			$i = $j + 1;
		} else {
			$o .= $c;
			$i++;
		}
	}
	return $o;
}

# From the '(' at $pos: the arguments (top-level commas) and the end.
sub call_args {
	my ($s, $pos) = @_;
	my ($depth, $cur, @args) = (0, '');
	my $n = length $s;
	for (my $i = $pos; $i < $n; $i++) {
		my $c = substr($s, $i, 1);
		if ($c eq '"' || $c eq "'") {
			my $j = $i + 1;
			while ($j < $n && substr($s, $j, 1) ne $c) {
				$j++ if substr($s, $j, 1) eq '\\';
				$j++;
			}
			$cur .= substr($s, $i, $j + 1 - $i);
			$i = $j;
			next;
		}
		if ($c eq '(' || $c eq '[' || $c eq '{') {
			$depth++;
			next if $depth == 1;
		} elsif ($c eq ')' || $c eq ']' || $c eq '}') {
			$depth--;
			if ($depth == 0) {
				push @args, $cur;
				return ([map { trim($_) } @args], $i);
			}
		} elsif ($c eq ',' && $depth == 1) {
			push @args, $cur;
			$cur = '';
			next;
		}
		$cur .= $c;
	}
	return ([], $n);
}

sub trim { my ($s) = @_; $s =~ s/^\s+|\s+$//g; $s =~ s/\s+/ /g; return $s; }

# Functions: name, parameters, body (text), the line the body starts on.
my @all_funcs;
# The function name that a call in file means: the file's own, else one
# that is not static.
sub func {
	my ($name, $file) = @_;
	my @f = grep { $_->{name} eq $name } @all_funcs;
	my ($own) = grep { $_->{file} eq $file } @f;
	return $own // (grep { !$_->{static} } @f)[0];
}
my %text;
for my $file (@ARGV) {
	open my $fh, '<', $file or die "$file: $!\n";
	local $/;
	my $src = <$fh>;
	close $fh;
	my $s = strip_comments($src);
	$text{$file} = $s;
	# A definition: a header at column 0 ending in ')' and a '{' at column 0.
	# (Or all on one line: "T f(void) { return x; }".)
	while ($s =~ /^([A-Za-z_][^;{}#=]*?\b(\w+)\s*(\([^;{}]*\)))\s*(?:\n\{\n|\{ (.*) \}$)/mg) {
		my ($name, $params, $start, $one) = ($2, $3, $+[0], $4);
		my $end = defined $one ? $+[0] : index($s, "\n}", $start);
		$start = $-[4] if defined $one;
		$end = length $s if $end < 0;
		my ($list) = call_args($params, 0);
		my @p = map { /\(\s*\*\s*(\w+)\s*\)/ ? $1 : /(\w+)\s*(?:\[[^\]]*\]\s*)*$/ ? $1 : '' } @$list;
		my $line = 1 + (substr($s, 0, $start) =~ tr/\n//);
		my $static = $1 =~ /^static\b/ ? 1 : 0;
		push @all_funcs, {file => $file, name => $name, params => \@p, static => $static,
		                  decls => [map { trim($_) } @$list],
		                  body => substr($s, $start, $end - $start), line => $line};
	}
}

# ---- what is safe --------------------------------------------------------------

my %memo;

sub strip_parens {
	my ($e) = @_;
	for (;;) {
		my $o = $e;
		# A cast: (type) expr.
		$e =~ s/^\((?:const |unsigned |signed |struct )*\w+(?: \*| const)*\s*\*?\)\s*(?=\S)//;
		if ($e =~ /^\((.*)\)$/s) {
			my ($a, $end) = call_args($e, 0);
			$e = $1 if $end == length($e) - 1;
		}
		$e = trim($e);
		return $e if $e eq $o;
	}
}

sub is_literal {
	my ($e) = @_;
	# Concatenated string literals, maybe with <inttypes.h> macros.
	return 1 if $e =~ /^(?:(?:"(?:[^"\\]|\\.)*"|PRI\w+|SCN\w+)\s*)+$/s && $e =~ /"/;
	return 1 if $e =~ /^'(?:[^'\\]|\\.+)'$/ || $e eq 'NULL';
	return 1 if $e =~ /^-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)[uUlLfF]*$/;
	return 0;
}

# Split "c ? a : b" at the top level; () if not a ternary.
sub ternary {
	my ($e) = @_;
	my ($depth, $q, $in) = (0, -1, '');
	for (my $i = 0; $i < length $e; $i++) {
		my $c = substr($e, $i, 1);
		if ($in) { $i++ if $c eq '\\'; $in = '' if $c eq $in; next; }
		if ($c eq '"' || $c eq "'") { $in = $c; next; }
		$depth++ if $c =~ /[([{]/;
		$depth-- if $c =~ /[)\]}]/;
		next if $depth;
		if ($c eq '?' && $q < 0) { $q = $i; next; }
		if ($c eq ':' && $q >= 0) {
			# the first ':' that closes the first '?' (nested ternaries: right side)
			my $mid = substr($e, $q + 1, $i - $q - 1);
			my $qs = () = $mid =~ /\?/g;
			my $cs = () = $mid =~ /:/g;
			next if $qs > $cs;
			return (substr($e, $q + 1, $i - $q - 1), substr($e, $i + 1));
		}
	}
	return ();
}

# Is expression $e, in function $f, safe to print as text?
sub safe {
	my ($e, $f, $depth) = @_;
	return 0 if $depth > 8;
	$e = strip_parens(trim($e));
	return 1 if is_literal($e);
	if (my @b = ternary($e)) {
		return safe($b[0], $f, $depth + 1) && safe($b[1], $f, $depth + 1);
	}
	if ($e =~ /^(\w+)\s*\(/) {
		my $g = $1;
		return 1 if $FIXED{$g} || $ESCAPE{$g};
		if ($INTO{$g}) {
			my ($args) = call_args($e, index($e, '('));
			return safe($args->[0] // '', $f, $depth + 1);
		}
		return returns_safe($g, $f ? $f->{file} : '', $depth + 1);
	}
	# The program's name as it was run (cli_init's progname).
	return 1 if $e eq 'argv[0]';
	return 1 if $e =~ /(?:->|\.)(\w+)$/ && $HEX_MEMBER{$1};
	# A table of literals, indexed.
	if ($e =~ /^(\w+)\s*\[[^\]]*\]$/ && literal_table($1, $f)) {
		return 1;
	}
	# x, x + n, &x[n], x[n] of a local buffer: what x holds.
	if ($e =~ /^&?(\w+)(?:\s*\[[^\]]*\])?(?:\s*\+\s*\w+)?$/) {
		return var_safe($1, $f, $depth + 1);
	}
	return 0;
}

# Is name a "const char *const name[] = {literals}" of f or of its file?
sub literal_table {
	my ($v, $f) = @_;
	return 0 unless $f;
	for my $t ($f->{body}, $text{$f->{file}}) {
		next unless $t =~ /\bchar\s*\*\s*(?:const\s+)?$v\s*\[[^\]]*\]\s*=\s*\{([^}]*)\}/;
		my $list = $1;
		my @el = map { s/^\s*\[[^\]]*\]\s*=//r } grep { /\S/ } split /,/, $list;
		return 0 if grep { !is_literal(trim($_)) } @el;
		return 1;
	}
	return 0;
}

sub returns_safe {
	my ($g, $file, $depth) = @_;
	my $fn = func($g, $file) or return 0;
	my $key = "ret $fn->{file} $g";
	return $memo{$key} if exists $memo{$key};
	$memo{$key} = 0; # recursion: not safe
	my @r = $fn->{body} =~ /\breturn\s+([^;]+);/g;
	my $ok = @r > 0;
	for my $r (@r) { $ok &&= safe($r, $fn, $depth); }
	return $memo{$key} = $ok ? 1 : 0;
}

sub var_safe {
	my ($v, $f, $depth) = @_;
	return 0 unless $f;
	my $key = "var $f->{name} $v";
	return $memo{$key} if exists $memo{$key};
	$memo{$key} = 0;
	my $body = $f->{body};
	my $ok;
	if ($body =~ /\bchar\s+(?:\w+\s*\[[^\]]*\]\s*,\s*)*$v\s*\[/) {
		$ok = buffer_safe($f, $v, $depth);
	} else {
		my @vals;
		# Declarations with a value and assignments.
		while ($body =~ /(?:^|[;{(,]|\s)\*?\s*$v\s*=(?!=)\s*([^;]+);/g) {
			push @vals, $1;
		}
		my $is_param = grep { $_ eq $v } @{$f->{params}};
		my $local = $body =~ /\b(?:char|const char)\s*\*\s*(?:const\s+)?$v\b/ || @vals;
		if (@vals && !grep { !/^(?:cli_xmalloc|malloc|cli_xcalloc|calloc)\s*\(/ } @vals) {
			# A buffer of its own, allocated: as a char array.
			return $memo{$key} = buffer_safe($f, $v, $depth) ? 1 : 0;
		} elsif ($is_param) {
			$ok = param_safe($f, $v, $depth);
		} elsif (!$local && $text{$f->{file}} =~ /^static\s+(?:const\s+)?char\s*\*\s*$v\s*=\s*([^;]+);/m) {
			# A variable of the file: its initial value and every assignment in it.
			$ok = safe($1, undef, $depth);
			for my $g (grep { $_->{file} eq $f->{file} } @all_funcs) {
				while ($g->{body} =~ /(?:^|[;{]|\s)$v\s*=(?!=)\s*([^;]+);/g) {
					$ok &&= safe($1, $g, $depth);
				}
			}
		} else {
			$ok = @vals > 0;
		}
		for my $x (@vals) { $ok &&= safe($x, $f, $depth); }
		# Changed in place (v++ over a name, v += n): still its value's text.
	}
	return $memo{$key} = $ok ? 1 : 0;
}

# A buffer v of f: every call that takes it first writes only safe text
# (snprintf with safe arguments, a number formatter, a function of the
# files given that does the same with its first parameter).
sub buffer_safe {
	my ($f, $v, $depth) = @_;
	return 0 if $depth > 8;
	my $body = $f->{body};
	my $ok = 1;
	# Every call it is an argument of (a pointer into it included).
	while ($body =~ /(?<![\w.>])(\w+)\s*\(/g) {
		my ($g, $at) = ($1, $-[0]);
		my ($args) = call_args($body, $+[0] - 1);
		my @pos = grep { $args->[$_] =~ /^(?:&\s*)?$v\b(?!\s*(?:->|\.))/ } 0 .. $#$args;
		next unless @pos;
		next if $READS{$g};
		my $h = func($g, $f->{file});
		for my $i (@pos) {
			my $this = 1;
			if (exists $FILLER{$g}) {
				$this = $i == $FILLER{$g};
			} elsif ($g eq 'snprintf' || $g eq 'sprintf') {
				# Written at 0, read elsewhere.
				next if $i;
				$this = format_safe($args, $g eq 'sprintf' ? 1 : 2, $f, $depth, undef);
			} elsif ($h && $h->{params}[$i]) {
				# A function of the files: const, it only reads; else what it writes.
				next if $h->{decls}[$i] =~ /\bconst\s+char\b|\bchar\s+const\b/;
				my $key = "fill $h->{file} $g $i";
				unless (exists $memo{$key}) {
					$memo{$key} = 0;
					$memo{$key} = buffer_safe($h, $h->{params}[$i], $depth + 1);
				}
				$this = $memo{$key};
			} else {
				$this = 0;
			}
			print STDERR "  $f->{file}: $f->{name}: $v given to $g\n" if $ENV{ESCAPE_DEBUG} && !$this;
			$ok &&= $this;
		}
	}
	# Written element by element: each a safe character (a digit of a
	# number, a literal); copied into: not followed.
	while ($body =~ /\b$v\s*\[[^\]]*\]\s*=(?!=)\s*([^;]+);/g) {
		$ok &&= safe($1, $f, $depth + 1);
	}
	$ok = 0 if $body =~ /\b(?:strcpy|strcat|memcpy|memmove|strncpy|vsnprintf)\s*\(\s*$v\b/;
	return $ok;
}

# Every call of function f, in every file, passes a safe argument for v.
sub param_safe {
	my ($f, $v, $depth) = @_;
	my ($idx) = grep { $f->{params}[$_] eq $v } 0 .. $#{$f->{params}};
	my $n = 0;
	for my $g (@all_funcs) {
		next if $f->{static} && $g->{file} ne $f->{file};
		my $body = $g->{body};
		while ($body =~ /(?<![\w.>])$f->{name}\s*\(/g) {
			my ($args) = call_args($body, $+[0] - 1);
			$n++;
			next if defined $args->[$idx] && safe($args->[$idx], $g, $depth + 1);
			# ESCAPE_DEBUG=1: which call made a parameter unsafe.
			print STDERR "  $g->{file}: $g->{name} passes $f->{name}($v) '" .
			             ($args->[$idx] // '') . "'\n" if $ENV{ESCAPE_DEBUG};
			return 0;
		}
	}
	return $n > 0;
}

# The %s, %c and %.*s arguments of a format call (format at index $fi).
sub format_safe {
	my ($args, $fi, $f, $depth, $bad) = @_;
	my $fmt = $args->[$fi] // '';
	return 0 unless is_literal($fmt);
	my $text = join '', $fmt =~ /"((?:[^"\\]|\\.)*)"/g;
	my $ai = $fi + 1;
	my $ok = 1;
	while ($text =~ /%([-+ #0']*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcspn%])/g) {
		my ($w, $p, $conv) = ($2, $3, $5);
		next if $conv eq '%';
		$ai++ if defined $w && $w eq '*';
		$ai++ if defined $p && $p eq '*';
		if ($conv eq 's' || $conv eq 'c') {
			my $a = $args->[$ai] // '';
			unless (safe($a, $f, $depth + 1)) {
				$ok = 0;
				push @$bad, $a if $bad;
			}
		}
		$ai++;
	}
	return $ok;
}

# ---- the output calls ------------------------------------------------------------

my @findings;
for my $f (sort { $a->{file} cmp $b->{file} || $a->{line} <=> $b->{line} } @all_funcs) {
	my $body = $f->{body};
	while ($body =~ /(?<![\w.>])(\w+)\s*\(/g) {
		my ($g, $at) = ($1, $-[0]);
		next unless $OUT{$g};
		my ($args, $end) = call_args($body, $+[0] - 1);
		my @bad;
		if ($g eq 'printf' || $g eq 'vprintf') {
			format_safe($args, 0, $f, 0, \@bad) or @bad or push @bad, $args->[0];
		} elsif ($g eq 'fprintf' || $g eq 'dprintf' || $g eq 'vfprintf') {
			format_safe($args, 1, $f, 0, \@bad) or @bad or push @bad, $args->[1];
		} elsif ($g eq 'fputs' || $g eq 'puts' || $g eq 'putchar' || $g eq 'fputc' ||
		         $g eq 'putc' || $g eq 'fwrite' || $g eq 'perror') {
			push @bad, $args->[0] unless safe($args->[0] // '', $f, 0);
		}
		my $line = $f->{line} + (substr($body, 0, $at) =~ tr/\n//);
		for my $a (@bad) {
			my $key = "$f->{file} $f->{name} $a";
			(my $k2 = $key) =~ s/ //g;
			my ($hit) = grep { (my $x = $_) =~ s/ //g; $x eq $k2 } keys %allow;
			if (defined $hit) {
				$allow{$hit}++;
				next;
			}
			push @findings, "$f->{file}:$line: $f->{name}: $g: $a";
		}
	}
}
# What the sinks keep for later.
for my $f (sort { $a->{file} cmp $b->{file} || $a->{line} <=> $b->{line} } @all_funcs) {
	my $body = $f->{body};
	while ($body =~ /(?<![\w.>])(\w+)\s*\(/g) {
		my ($g, $at) = ($1, $-[0]);
		next unless $SINK{$g};
		my ($args) = call_args($body, $+[0] - 1);
		my $line = $f->{line} + (substr($body, 0, $at) =~ tr/\n//);
		for my $i (@{$SINK{$g}}) {
			my $a = $args->[$i] // '';
			# A compound literal of cells: each one.
			my @el = $a =~ /^\([^)]*\)\s*\{(.*)\}$/s ? @{(call_args("{$1}", 0))[0]} : ($a);
			for my $x (@el) {
				next if safe($x, $f, 0);
				my $key = "$f->{file} $f->{name} $x";
				(my $k2 = $key) =~ s/ //g;
				my ($hit) = grep { (my $y = $_) =~ s/ //g; $y eq $k2 } keys %allow;
				if (defined $hit) { $allow{$hit}++; next; }
				push @findings, "$f->{file}:$line: $f->{name}: $g: $x";
			}
		}
	}
}
print "$_\n" for @findings;
my @stale = grep { !$allow{$_} } sort keys %allow;
print "allow-list entry matches no call (remove it): $_\n" for @stale;
exit(@findings || @stale ? 1 : 0);
