# SQLAlchemy (1.4 on Debian 12, 2.0 on Debian 13) on an in-memory SQLite database: Core and ORM.
from sqlalchemy import Column, ForeignKey, Integer, String, create_engine, func, select, text
from sqlalchemy.orm import Session, declarative_base, relationship

Base = declarative_base()

class Customer(Base):
    __tablename__ = 'customer'
    id = Column(Integer, primary_key=True)
    name = Column(String(50), nullable=False)
    orders = relationship('Order', back_populates='customer')

class Order(Base):
    __tablename__ = 'orders'
    id = Column(Integer, primary_key=True)
    amount = Column(Integer)
    customer_id = Column(Integer, ForeignKey('customer.id'))
    customer = relationship('Customer', back_populates='orders')

engine = create_engine('sqlite://')
Base.metadata.create_all(engine)
with Session(engine) as s:
    ada, bob = Customer(name='ada'), Customer(name='bob')
    ada.orders = [Order(amount=30), Order(amount=12)]
    bob.orders = [Order(amount=5)]
    s.add_all([ada, bob])
    s.commit()
    q = select(Customer.name, func.sum(Order.amount)).join(Order).group_by(Customer.name).order_by(Customer.name)
    totals = [tuple(r) for r in s.execute(q)]
assert totals == [('ada', 42), ('bob', 5)], totals
with engine.connect() as c:
    assert c.execute(text('select count(*) from orders')).scalar() == 3
print('totals', totals)
print('CORPUS-OK sqlalchemy_sqlite')
