"""apimachinery's label key and value messages, copied by hand, shared by the rule tests."""

# Messages copied by hand from k8s.io/apimachinery api/validate/content
# (kube.go, dns.go, errors.go). The examples as pkg/util/validation/validation.go
# RegexError joins them: each "'x', " then " or ", two spaces before each "or".
KEY_REGEX = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value', "
    " or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
