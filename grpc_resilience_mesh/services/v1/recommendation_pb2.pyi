from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Product(_message.Message):
    __slots__ = ("product_id", "title", "category", "price_cents", "score")
    PRODUCT_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    PRICE_CENTS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    product_id: str
    title: str
    category: str
    price_cents: int
    score: float
    def __init__(self, product_id: _Optional[str] = ..., title: _Optional[str] = ..., category: _Optional[str] = ..., price_cents: _Optional[int] = ..., score: _Optional[float] = ...) -> None: ...

class RecommendRequest(_message.Message):
    __slots__ = ("user_id", "limit")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    limit: int
    def __init__(self, user_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class PopularRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class RecommendResponse(_message.Message):
    __slots__ = ("products", "source")
    PRODUCTS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    products: _containers.RepeatedCompositeFieldContainer[Product]
    source: str
    def __init__(self, products: _Optional[_Iterable[_Union[Product, _Mapping]]] = ..., source: _Optional[str] = ...) -> None: ...

class RankedProduct(_message.Message):
    __slots__ = ("product", "rank")
    PRODUCT_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    product: Product
    rank: int
    def __init__(self, product: _Optional[_Union[Product, _Mapping]] = ..., rank: _Optional[int] = ...) -> None: ...
