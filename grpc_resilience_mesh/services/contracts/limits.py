"""The numbers the API's field rules (fields.py) hold a request to, apart from the rules, so
what checks a value before it is sent (a chaos scenario's params) reads them without loading
the servicers' refusal machinery."""

MAX_AMOUNT_CENTS = 100_000_000
MAX_LIMIT = 50
"""The most recommendations a GetHome or StreamRecommend asks for."""
DEFAULT_LIMIT = 10
"""What a `limit` of 0 means."""
