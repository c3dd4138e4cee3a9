/**
 * Columns of a generated row type (zapatos `Selectable`, `Insertable` or `JSONSelectable`, or a
 * `Pick` of one) with some narrowed to what svc stores in them: a jsonb column to its document,
 * a text column to its union. Every key of `Narrow` must be a column of `Row`, so a migration
 * that renames or drops one fails the type check here, as it does in a `Pick`; a plain
 * `Pick<…> & { column: T }` would quietly keep the old name (test/db/schema-typecheck.test.ts).
 */
export type Narrowed<Row, Narrow extends ColumnsOf<Row, Narrow>> = Omit<Row, keyof Narrow> & Narrow;

/** `Narrow` with every key that is not a column of `Row` required to be `never`. */
type ColumnsOf<Row, Narrow> = { [K in keyof Narrow]: K extends keyof Row ? unknown : never };
